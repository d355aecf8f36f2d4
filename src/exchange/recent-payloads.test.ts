import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RecentPayloads, RECENT_PAYLOAD_MAX } from './recent-payloads.ts';

describe('RecentPayloads', () => {
  it('keeps small payloads within its total, the least recently used going first, and never large ones', () => {
    const recent = new RecentPayloads(3000);
    recent.remember('a', Buffer.alloc(1000));
    recent.remember('b', Buffer.alloc(1000));
    recent.remember('c', Buffer.alloc(1000));
    assert.ok(recent.get('a'));
    recent.remember('d', Buffer.alloc(1000));
    assert.equal(recent.get('b'), undefined, 'the least recently used went');
    assert.ok(recent.get('a') && recent.get('c') && recent.get('d'));
    recent.forget('a');
    assert.equal(recent.get('a'), undefined);
    const large = new RecentPayloads(10 * RECENT_PAYLOAD_MAX);
    large.remember('big', Buffer.alloc(RECENT_PAYLOAD_MAX + 1));
    assert.equal(large.get('big'), undefined);
  });
});
