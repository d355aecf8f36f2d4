import { Type } from 'typebox';
import { MESSAGE_ID_PATTERN } from '../seal/client.ts';

/**
 * The sealed message a request is about. A session may open several (every message its proven factors
 * satisfy), so requests name theirs; without it, the message the session signed in for last.
 */
export const MESSAGE_QUERY = {
  messageId: Type.Optional(
    Type.String({
      pattern: MESSAGE_ID_PATTERN,
      description: 'the sealed message; default: the one this session signed in for last',
    }),
  ),
};
export const MessageQuery = Type.Object(MESSAGE_QUERY, { additionalProperties: false });
