import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseSealExpiry, SealExpiryError, sealEndDate } from './seal-expiry.ts';

const HOUR = 3_600_000;

describe('X-Sealpost-Expires', () => {
  it('reads a life in days, a Go duration, both together, or an RFC 3339 time', () => {
    assert.deepEqual(parseSealExpiry('7d'), { lifeMs: 7 * 24 * HOUR });
    assert.deepEqual(parseSealExpiry('72h'), { lifeMs: 72 * HOUR });
    assert.deepEqual(parseSealExpiry(' 1d12h '), { lifeMs: 36 * HOUR });
    assert.deepEqual(parseSealExpiry('2s'), { lifeMs: 2000 });
    assert.deepEqual(parseSealExpiry('2027-01-31T17:00:00+01:00'), { at: new Date('2027-01-31T16:00:00Z') });
  });

  it('refuses what is malformed, no life at all, or a time already past, naming the value', () => {
    const now = new Date('2026-12-07T00:00:00Z');
    for (const value of [
      '',
      'soon',
      '7',
      '7days',
      '-1h',
      '0s',
      '0d',
      'd',
      '1d-2h',
      '2027-02-30T00:00:00Z',
      '2027-01-31',
    ]) {
      assert.throws(
        () => parseSealExpiry(value, now),
        (error: unknown) =>
          error instanceof SealExpiryError && error.message.startsWith(`X-Sealpost-Expires: ${JSON.stringify(value)}`),
        value,
      );
    }
    assert.throws(() => parseSealExpiry('2026-12-06T23:59:59Z', now), /lies in the past/);
    assert.deepEqual(parseSealExpiry('2026-12-06T23:59:59Z'), { at: new Date('2026-12-06T23:59:59Z') });
  });

  it("ends a message at the sender's ask or the default, never past the maximum", () => {
    const sealed = new Date('2026-12-07T00:00:00Z');
    const at = (h: number) => new Date(sealed.getTime() + h * HOUR);
    assert.equal(sealEndDate(sealed, undefined, {}), undefined);
    assert.deepEqual(sealEndDate(sealed, undefined, { defaultMs: 24 * HOUR }), at(24));
    assert.deepEqual(sealEndDate(sealed, undefined, { maxMs: 48 * HOUR }), at(48));
    assert.deepEqual(sealEndDate(sealed, { lifeMs: 2 * HOUR }, { defaultMs: 24 * HOUR }), at(2));
    assert.deepEqual(sealEndDate(sealed, { lifeMs: 72 * HOUR }, { defaultMs: 24 * HOUR, maxMs: 48 * HOUR }), at(48));
    assert.deepEqual(sealEndDate(sealed, { at: at(30) }, { maxMs: 48 * HOUR }), at(30));
  });
});
