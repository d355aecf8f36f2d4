import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as turn } from 'node:timers/promises';
import { RULE_SNAPSHOT_MAX_RULES, RuleSnapshot, type RuleParams } from './snapshot.ts';

/** A snapshot over rules the test controls, on a clock it moves; counts the loads. */
function snapshotOf(rules: RuleParams[], ttlMs = 1000) {
  let now = 0;
  let loads = 0;
  let release: (() => void) | undefined;
  let hold = false;
  const snapshot = new RuleSnapshot(
    async () => {
      loads += 1;
      const copy = [...rules];
      if (hold) await new Promise<void>((resolve) => (release = resolve));
      return copy;
    },
    { ttlMs, now: () => now },
  );
  return {
    snapshot,
    loads: () => loads,
    advance: (ms: number) => (now += ms),
    holdLoads: () => (hold = true),
    releaseLoad: () => release?.(),
  };
}

/** applies() once to start the load, then once the load has settled. */
async function loaded(snapshot: RuleSnapshot): Promise<void> {
  snapshot.applies('smtp', '');
  await turn();
}

describe('the rule snapshot of MAIL FROM', () => {
  it('says "ask PostgreSQL" until it has read the rules, then answers from them without reading again', async () => {
    const t = snapshotOf([{ channel: 'smtp', sender: null }]);
    assert.equal(t.snapshot.applies('smtp', 'a@b.example'), false);
    await turn();
    for (let i = 0; i < 100; i++) assert.equal(t.snapshot.applies('smtp', `user${i}@b.example`), true);
    assert.equal(t.loads(), 1);
  });

  it('matches as the rules do: the channel, and a rule for every sender or for this one in any case', async () => {
    const t = snapshotOf([
      { channel: 'json', sender: null },
      { channel: 'smtp', sender: 'Bob@example.com' },
    ]);
    await loaded(t.snapshot);
    assert.equal(t.snapshot.applies('json', 'anyone@example.com'), true);
    assert.equal(t.snapshot.applies('smtp', 'bob@example.com'), true);
    assert.equal(t.snapshot.applies('smtp', 'alice@example.com'), false);
    assert.equal(t.snapshot.applies('smtp', ''), false);
  });

  it('is read again once older than its lifetime, and answers "ask PostgreSQL" meanwhile', async () => {
    const rules: RuleParams[] = [{ channel: 'smtp', sender: null }];
    const t = snapshotOf(rules);
    await loaded(t.snapshot);
    rules.length = 0; // deleted on another instance
    t.advance(999);
    assert.equal(t.snapshot.applies('smtp', 'a@b.example'), true, 'within its lifetime the old picture answers');
    t.advance(1);
    assert.equal(t.snapshot.applies('smtp', 'a@b.example'), false);
    assert.equal(t.snapshot.applies('smtp', 'a@b.example'), false);
    await turn();
    assert.equal(t.loads(), 2, 'one read for both lookups');
    assert.equal(t.snapshot.applies('smtp', 'a@b.example'), false, 'the deletion is seen');
  });

  it('forgets what it read when told the rules changed, even a read still under way', async () => {
    const rules: RuleParams[] = [{ channel: 'smtp', sender: null }];
    const t = snapshotOf(rules);
    await loaded(t.snapshot);
    t.snapshot.invalidate();
    assert.equal(t.snapshot.applies('smtp', 'a@b.example'), false);
    t.holdLoads();
    await turn();
    // A read that started before a change must not install what it read.
    t.advance(2000);
    t.snapshot.applies('smtp', 'a@b.example');
    await turn();
    t.snapshot.invalidate();
    t.releaseLoad();
    await turn();
    assert.equal(t.snapshot.applies('smtp', 'a@b.example'), false);
  });

  it('holds nothing with a lifetime of 0 (SMTP_RULE_CACHE_TTL=0s): it never reads', async () => {
    const t = snapshotOf([{ channel: 'smtp', sender: null }], 0);
    await loaded(t.snapshot);
    assert.equal(t.snapshot.applies('smtp', 'a@b.example'), false);
    assert.equal(t.loads(), 0);
  });

  it('holds no more than RULE_SNAPSHOT_MAX_RULES rules: with more, every lookup asks PostgreSQL', async () => {
    const many = Array.from({ length: RULE_SNAPSHOT_MAX_RULES + 1 }, () => ({
      channel: 'smtp' as const,
      sender: null,
    }));
    const t = snapshotOf(many);
    await loaded(t.snapshot);
    assert.equal(t.snapshot.applies('smtp', 'a@b.example'), false);
    assert.equal(t.loads(), 1, 'and it is not read again before its lifetime is over');
  });
});
