import assert from 'node:assert/strict';
import type { ReaderResponse } from './auth-reader.ts';

/** The spec's error object with this status (kind) and errorCode. */
export function assertError(response: ReaderResponse, status: number, errorCode: string | undefined): void {
  const context = JSON.stringify(response.body);
  assert.equal(response.status, status, context);
  assert.equal(response.body.kind, status, context);
  assert.equal(response.body.errorCode, errorCode, context);
  assert.equal(typeof response.body.id, 'string', context);
  assert.equal(typeof response.body.message, 'string', context);
}
