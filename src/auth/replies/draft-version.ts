import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { AppError } from '../../kernel/errors.ts';
import type { ExpectedVersion } from '../drafts/store.ts';

/**
 * The reply draft's version travels as an entity tag: answers carry `ETag: "<version>"`, changes send it
 * back in `If-Match`. A header rather than a body field, so that the same rule holds for the JSON
 * bodies, the multipart upload and the DELETE that has no body.
 */
export const VERSION_NOTE =
  'If-Match: the draft\'s version as the client has it (`"7"`, from the `version` field or the ETag header of ' +
  'GET /v1/message/reply and of every change). The change is made only if the draft is still at that version, ' +
  'and raises it by one; otherwise 409 draft_conflict and nothing changes (another window or device ' +
  'changed the reply: load it again), or 409 reply_already_sent with sentAt when the draft at that version was ' +
  'sent meanwhile. Without If-Match the change is made whatever the version.';

export const IfMatchHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({ description: 'the draft\'s version as an entity tag, e.g. "7" (see the description)' }),
  ),
});

/** The version in If-Match; undefined when there is none (or `*`). Anything else is validation_failed. */
export function expectedVersion(request: FastifyRequest): ExpectedVersion {
  const header = request.headers['if-match'];
  if (header === undefined) return undefined;
  const value = (Array.isArray(header) ? header.join(',') : header).trim();
  if (value === '*' || value === '') return undefined;
  const match = /^(?:W\/)?"?(\d{1,9})"?$/.exec(value);
  if (!match) throw new AppError('validation_failed', 400, 'If-Match must hold one draft version, e.g. "7"');
  return Number(match[1]);
}

export const versionTag = (version: number) => `"${version}"`;

export function setVersion(reply: FastifyReply, version: number): void {
  void reply.header('etag', versionTag(version));
}
