import { badRequest } from '../../kernel/errors.ts';

/**
 * Decodes canonical base64 (no line breaks, padded) or throws a 400 naming the field. The check is a
 * linear scan: simple character-class runs cost no regex stack, whatever the length.
 */
export function decodeBase64(value: string, field: string): Buffer {
  if (value.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(value)) {
    throw badRequest(`${field} must be base64 without line breaks`);
  }
  return Buffer.from(value, 'base64');
}
