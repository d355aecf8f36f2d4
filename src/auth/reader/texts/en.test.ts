import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { ApiError } from '../api.ts';
import { errorText } from '../errors.ts';
import { en } from './en.ts';

/**
 * Every errorCode the services can answer has its own sentence on the page. en.ts checks this with
 * `satisfies` too, but only the type checker sees that; this runs with the tests.
 */

/**
 * The auth service's codes as docs/specification.md#error-codes lists them, written out rather than read from
 * the code under test.
 */
const SPEC_CODES = [
  'expired_code',
  'incorrect_code',
  'invalid_email',
  'invalid_mobile',
  'invalid_code_or_email',
  'invalid_bcc_address',
  'email_mismatch',
  'unauthorized_user',
  'forbidden_auth_method',
  'forbidden_file_type',
  'malware_detected',
  'file_too_large',
  'upload_limit_reached',
  'new_mobile_conflict',
  'sms_rate_limit',
  'email_and_mobile_mismatch',
];

const KERNEL_ERRORS = fileURLToPath(new URL('../../../kernel/errors.ts', import.meta.url));

/** The members of `export type ErrorCode = 'a' | 'b' | …` in the kernel: every code a service can send. */
async function serverErrorCodes(): Promise<string[]> {
  const source = ts.createSourceFile(KERNEL_ERRORS, await readFile(KERNEL_ERRORS, 'utf8'), ts.ScriptTarget.Latest, true);
  const alias = source.statements.find((s): s is ts.TypeAliasDeclaration => ts.isTypeAliasDeclaration(s) && s.name.text === 'ErrorCode');
  assert.ok(alias && ts.isUnionTypeNode(alias.type), 'ErrorCode is a union of string literals in src/kernel/errors.ts');
  return alias.type.types.map((member) => {
    assert.ok(ts.isLiteralTypeNode(member) && ts.isStringLiteral(member.literal), `not a string literal: ${member.getText(source)}`);
    return member.literal.text;
  });
}

describe('the reader page texts', () => {
  it('know every errorCode of the spec and of the services, and no other', async () => {
    const codes = await serverErrorCodes();
    assert.ok(codes.length >= SPEC_CODES.length);
    for (const code of SPEC_CODES) assert.ok(codes.includes(code), `${code} (spec) is missing from ErrorCode`);
    assert.deepEqual(Object.keys(en.errors).sort(), [...codes].sort());
  });

  it('show a sentence of its own for each errorCode, never the server message', async () => {
    for (const code of await serverErrorCodes()) {
      const sentence = (en.errors as Record<string, string>)[code];
      assert.equal(typeof sentence, 'string', code);
      assert.match(sentence!, /^[A-Z].{10,}[.!]$/, `${code}: a whole sentence`);
      assert.ok(!sentence!.includes(code) && !/[{}_]/.test(sentence!), `${code}: no code or JSON in the sentence`);
      // At a 4xx and a 5xx: the fallback sentences of the two differ, so only the errorCode gives both the same.
      for (const status of [400, 503]) {
        const shown = errorText(en, new ApiError(status, code, 'some-id', undefined, 'technical message for the log'));
        assert.equal(shown, sentence, `${code} at ${status}`);
      }
    }
  });
});
