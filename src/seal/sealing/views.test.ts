import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SEAL_HEADER_MAX_LENGTH } from '../../contracts/seal.ts';
import type { SealedPin } from '../tables.ts';
import type { SealedRecord } from './store.ts';
import { sealHeader } from './views.ts';

const sealedAt = new Date('2026-11-26T10:00:00Z');

function recordWith(pins: Array<Pick<SealedPin, 'cluster' | 'status' | 'error'>>): SealedRecord {
  const id = '0b6f1c2e-8d2a-4a8e-9c1e-2f3a4b5c6d7e';
  return {
    message: { id, cid: 'bafkreicid', sha256: 'a'.repeat(64), sealed_at: sealedAt } as SealedRecord['message'],
    recipients: [],
    pins: pins.map((pin, position) => ({
      ...pin,
      sealed_id: id,
      position,
      attempts: 1,
      next_attempt_at: null,
      overdue_at: null,
      updated_at: sealedAt,
    })),
  };
}

describe('the X-Sealpost-Seal header', () => {
  it('carries id, cid, sha256, sealedAt and each pin state as base64url JSON, no retry details', () => {
    const header = sealHeader(recordWith([{ cluster: 'a:9094', status: 'pin_error', error: 'refused: quota' }]));
    assert.deepEqual(JSON.parse(Buffer.from(header!, 'base64url').toString('utf8')), {
      id: '0b6f1c2e-8d2a-4a8e-9c1e-2f3a4b5c6d7e',
      cid: 'bafkreicid',
      sha256: 'a'.repeat(64),
      sealedAt: '2026-11-26T10:00:00.000Z',
      pins: [{ cluster: 'a:9094', status: 'pin_error', error: 'refused: quota' }],
    });
  });

  it('is left out when it would pass SEAL_HEADER_MAX_LENGTH (many clusters with long errors)', () => {
    const pins = Array.from({ length: 20 }, (_, n) => ({
      cluster: `cluster-${n}:9094`,
      status: 'pin_error' as const,
      error: 'x'.repeat(500),
    }));
    assert.equal(sealHeader(recordWith(pins)), undefined);
    assert.ok(sealHeader(recordWith(pins.slice(0, 2)))!.length <= SEAL_HEADER_MAX_LENGTH);
  });
});
