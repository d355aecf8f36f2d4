/**
 * The seal service's sender API and trail as docs/specification.md#the-senders-side describes them, checked
 * here until the seal service's own schemas for them are in src/contracts/seal.ts.
 */
import { Type } from 'typebox';
import { SealEndSchema } from '../../contracts/seal.ts';

/** The events A reports to B (docs/specification.md#trail). */
export const REPORTED_EVENTS = [
  'notified',
  'code_sent',
  'sign_in_succeeded',
  'sign_in_failed',
  'opened',
  'attachment_downloaded',
  'reply_sent',
] as const;
export type ReportedEvent = (typeof REPORTED_EVENTS)[number];

const Time = Type.String({ format: 'date-time' });

export const TrailEntrySchema = Type.Object({
  at: Time,
  event: Type.String(),
  recipient: Type.Optional(Type.String()),
  client: Type.Optional(Type.String()),
  detail: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});

export const TrailSchema = Type.Object({ id: Type.String(), trail: Type.Array(TrailEntrySchema) });

export const EventAnswerSchema = Type.Object({ first: Type.Boolean() });

export const SenderMessageSchema = Type.Object({
  id: Type.String(),
  subject: Type.String(),
  sealedAt: Time,
  expiresAt: Type.Optional(Time),
  end: Type.Optional(SealEndSchema),
  recipients: Type.Array(
    Type.Object({
      email: Type.String(),
      withdrawnAt: Type.Optional(Time),
      notifiedAt: Type.Optional(Time),
      firstOpenedAt: Type.Optional(Time),
      lastOpenedAt: Type.Optional(Time),
      failedSignIns: Type.Integer({ minimum: 0 }),
      downloads: Type.Integer({ minimum: 0 }),
      replies: Type.Integer({ minimum: 0 }),
    }),
  ),
});

export const SenderSealedSchema = Type.Object({ sealed: Type.Array(SenderMessageSchema) });
