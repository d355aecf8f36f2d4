import { Type } from 'typebox';

/** Error responses of the auth routes, for the OpenAPI description (all are the spec's error object). */
export function errorResponses(...statuses: number[]) {
  return Object.fromEntries(statuses.map((status) => [status, Type.Ref('ErrorObject')]));
}

export const TAGS = { signIn: ['sign-in'], reading: ['reading'], replying: ['replying'], sender: ['sender'] };

/** Mentioned on every state-changing route (docs/specification.md#csrf). */
export const CSRF_NOTE =
  'Needs the X-CSRF-Token header with the token from GET /v1/config, GET /v1/sender/config or ' +
  'GET /v1/message/files (403 otherwise).';
