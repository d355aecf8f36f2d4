/**
 * The seal service's API as both sides see it: the service validates and documents its answers with these
 * schemas, and the auth service and the exchange check what they receive against the same ones
 * (`Value.Check`) and take their types from them. Types and schemas only: no service code, so that any
 * service may import this folder while none imports another service.
 */
import { type Static, type TLiteral, type TSchemaOptions, Type } from 'typebox';
import { LANGUAGES } from '../kernel/languages.ts';

const PinSchema = Type.Object({
  cluster: Type.String({ description: '`host:port` of the cluster' }),
  status: Type.Union([Type.Literal('pinning'), Type.Literal('pinned'), Type.Literal('pin_error')], {
    description:
      '`pinning`: the cluster accepted the pin and IPFS has not pinned it yet ' +
      '(followed every SEAL_PIN_CHECK_INTERVAL); `pinned`: every allocated peer of ' +
      'the cluster holds it; `pin_error`: refused, unreachable or failed in IPFS, ' +
      'pinned again in the background (SEAL_REPIN_INTERVAL, doubling up to 1h) until it holds',
  }),
  error: Type.Optional(Type.String({ description: 'why the last attempt failed' })),
});

const PinDetailSchema = Type.Object({
  cluster: PinSchema.properties.cluster,
  status: PinSchema.properties.status,
  error: PinSchema.properties.error,
  attempts: Type.Integer({ description: 'attempts so far, the first one included' }),
  updatedAt: Type.String({ format: 'date-time' }),
  nextAttemptAt: Type.Optional(
    Type.String({
      format: 'date-time',
      description: 'when a pin not held yet is looked at (pinning) or pinned (pin_error) again',
    }),
  ),
});

/**
 * How a recipient signs in to read (docs/design.md#recipients), and the only list of the ways: the type,
 * the schemas here and in the auth service's routes, and the auth service's registry of methods
 * (src/auth/methods/registry.ts) all come from it.
 */
export const SIGN_IN_METHODS = ['sms', 'email'] as const;
export type SignInMethodName = (typeof SIGN_IN_METHODS)[number];

type Literals<T extends readonly string[]> = { -readonly [K in keyof T]: TLiteral<T[K]> };

/** A sign-in method's name in a request or an answer: the `anyOf` of constants, one per listed name. */
export function signInMethodSchema(options?: TSchemaOptions) {
  return Type.Union(SIGN_IN_METHODS.map((name) => Type.Literal(name)) as Literals<typeof SIGN_IN_METHODS>, options);
}

/**
 * Where a recipient's mobile number came from (docs/specification.md#contacts), in order of precedence: the
 * sender's X-Sealpost-Mobile (or JSON `recipients[].mobile`), the number the recipient confirmed since (a mobile
 * change, or one added after an email sign-in), the operator's contacts directory.
 */
export const MOBILE_SOURCES = ['header', 'confirmed', 'directory'] as const;
export type MobileSource = (typeof MOBILE_SOURCES)[number];

export const MobileSourceSchema = Type.Union(
  MOBILE_SOURCES.map((name) => Type.Literal(name)) as Literals<typeof MOBILE_SOURCES>,
  {
    description:
      'where the mobile number came from: `header` (the sender), `confirmed` (the recipient confirmed it since), ' +
      "`directory` (the operator's contacts); absent: no number, sign-in by email",
  },
);

const MethodSchema = signInMethodSchema({
  description: '`sms` when the sender gave a mobile number (X-Sealpost-Mobile), else `email`',
});

const LanguageSchema = Type.Enum([...LANGUAGES], {
  description:
    'the language the sender chose for this recipient ' +
    '(X-Sealpost-Language); absent: the default (NOTIFY_DEFAULT_LANGUAGE)',
});

const ExpiresAtSchema = Type.String({
  format: 'date-time',
  description:
    'when the message ends: X-Sealpost-Expires of the sender, or SEAL_DEFAULT_EXPIRY, held to SEAL_MAX_EXPIRY; ' +
    'absent: it does not end by itself',
});

/** How a sealed message ended, once it has: its content is gone (the key destroyed), its record stays. */
export const SealEndSchema = Type.Object(
  {
    reason: Type.Union([Type.Literal('expired'), Type.Literal('withdrawn')]),
    at: Type.String({ format: 'date-time', description: 'when it ended' }),
    note: Type.Optional(Type.String({ description: 'withdrawn: the reason the operator or the sender gave' })),
  },
  { title: 'End of a sealed message' },
);

export const SealHeadersSchema = Type.Object({
  'x-sealpost-envelope-id': Type.String({
    format: 'uuid',
    description: "the exchange's envelope id: sealing the same envelope again answers 200 with the same record",
  }),
  'x-sealpost-envelope-recipients': Type.Optional(
    Type.String({
      maxLength: 1_000_000,
      description: "the SMTP envelope's RCPT TO list, comma-separated: adds Bcc recipients to To and Cc",
    }),
  ),
});

export const SealResponseSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'the sealed-message id (reader link `{AUTH_PUBLIC_URL}/m/{id}`)' }),
    cid: Type.String({ description: 'CID of the encrypted content, as pinned' }),
    sha256: Type.String({ description: 'SHA-256 of the plaintext (the raw message as received), hex' }),
    sender: Type.String({ description: 'the From address, normalised' }),
    subject: Type.String({ description: "the decoded Subject; '' when there is none" }),
    recipients: Type.Array(
      Type.Object({
        email: Type.String(),
        method: MethodSchema,
        mobileSource: Type.Optional(MobileSourceSchema),
        language: Type.Optional(LanguageSchema),
        link: Type.String({
          description: "the recipient's reader link (with `?lang=` when the sender chose a language)",
        }),
      }),
    ),
    pins: Type.Array(PinSchema),
    expiresAt: Type.Optional(ExpiresAtSchema),
  },
  { title: 'Sealed message (seal answer)' },
);

export const SealedParams = Type.Object({ id: Type.String({ format: 'uuid', description: 'sealed-message id' }) });
export const RecipientParams = Type.Object({
  id: SealedParams.properties.id,
  email: Type.String({
    minLength: 3,
    maxLength: 254,
    description: 'the address, compared after normalisation and case-insensitively',
  }),
});

export const RecipientSchema = Type.Object({
  email: Type.String(),
  method: MethodSchema,
  mobile: Type.Optional(Type.String({ description: 'E.164 mobile number, for method `sms`' })),
  mobileSource: Type.Optional(MobileSourceSchema),
  language: Type.Optional(LanguageSchema),
  withdrawnAt: Type.Optional(
    Type.String({ format: 'date-time', description: 'when the message was withdrawn for this recipient alone' }),
  ),
});

export const RecipientLookupParams = Type.Object({ email: RecipientParams.properties.email });
export const RecipientLookupQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.String({
        pattern: '^(200|1[0-9]{2}|[1-9][0-9]?)$',
        description: 'at most this many (1 to 200, default 50), newest first',
      }),
    ),
    before: Type.Optional(
      Type.String({ format: 'date-time', description: 'only messages sealed before this time (the next page)' }),
    ),
    beforeId: Type.Optional(
      Type.String({
        format: 'uuid',
        description:
          'with before: the id of the last entry of the page before, whose sealedAt is `before`; messages sealed in ' +
          'that same millisecond with a greater id come next, so a page boundary between them skips neither',
      }),
    ),
  },
  { additionalProperties: false },
);

export const RecipientSealedSchema = Type.Object(
  {
    sealed: Type.Array(
      Type.Object({
        id: Type.String({ format: 'uuid' }),
        sender: Type.String(),
        subject: Type.String(),
        sealedAt: Type.String({ format: 'date-time' }),
        recipient: RecipientSchema,
        expiresAt: Type.Optional(ExpiresAtSchema),
        end: Type.Optional(SealEndSchema),
      }),
      { description: 'newest first' },
    ),
  },
  { title: 'Sealed messages of one recipient' },
);

export const SealedViewSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    cid: Type.String(),
    sha256: Type.String(),
    size: Type.Integer({ description: 'plaintext bytes' }),
    sender: Type.String(),
    subject: Type.String(),
    sealedAt: Type.String({ format: 'date-time' }),
    recipients: Type.Array(RecipientSchema),
    pins: Type.Array(PinDetailSchema),
    expiresAt: Type.Optional(ExpiresAtSchema),
    end: Type.Optional(SealEndSchema),
  },
  { title: 'Sealed message' },
);

export const OpenSealsSchema = Type.Object(
  {
    seals: Type.Array(
      Type.Object({
        id: Type.String({ format: 'uuid' }),
        cid: Type.String(),
        sealedAt: Type.String({ format: 'date-time' }),
        overdue: Type.Boolean({ description: 'not pinned everywhere SEAL_PIN_DEADLINE after sealing' }),
        pins: Type.Array(PinDetailSchema),
      }),
    ),
  },
  { title: 'Seals not pinned everywhere' },
);

/**
 * The `X-Sealpost-Seal` header of GET /v1/sealed/{id}/content: the seal the content was verified
 * against, as base64url of this JSON, so that a reader of the content needs no second request for it.
 * Left out when it would be longer than SEAL_HEADER_MAX_LENGTH (many clusters with long pin errors):
 * GET /v1/sealed/{id} has the same facts.
 */
export const SEAL_HEADER = 'x-sealpost-seal';
export const SEAL_HEADER_MAX_LENGTH = 8 * 1024;
export const SealFactsSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    cid: Type.String(),
    sha256: Type.String(),
    sealedAt: Type.String({ format: 'date-time' }),
    pins: Type.Array(PinSchema),
  },
  { title: 'Seal of the content' },
);

/**
 * GET /v1/sealed/{id}/content?recipient=: the reader the content is for. A message withdrawn for that recipient
 * answers 410 message_withdrawn as one withdrawn for everyone does; without it only the message's own end counts.
 */
export const ContentQuery = Type.Object(
  {
    recipient: Type.Optional(
      Type.String({ minLength: 3, maxLength: 254, description: 'the reader, compared as recipients are' }),
    ),
  },
  { additionalProperties: false },
);

/** POST /v1/admin/sealed/{id}/withdraw (admin token). */
export const WithdrawBodySchema = Type.Object(
  {
    reason: Type.String({
      minLength: 1,
      maxLength: 500,
      description: 'why, kept in the record and shown to nobody but the sender and operators',
    }),
    recipient: Type.Optional(
      Type.String({
        minLength: 3,
        maxLength: 254,
        description: 'withdraw for this recipient alone; absent: for everyone (the content is destroyed)',
      }),
    ),
  },
  { additionalProperties: false, title: 'Withdrawal' },
);

/** POST /v1/sealed/ended (service token): which of these messages have ended, for the auth service's drafts. */
export const EndedQuerySchema = Type.Object(
  { ids: Type.Array(Type.String({ format: 'uuid' }), { maxItems: 500 }) },
  { additionalProperties: false },
);
export const EndedAnswerSchema = Type.Object(
  { ended: Type.Array(Type.Object({ id: Type.String({ format: 'uuid' }), end: SealEndSchema })) },
  { title: 'Ended sealed messages' },
);

/**
 * The trail's events (docs/specification.md#trail), in the order of its table: the seal service writes
 * `sealed`, `withdrawn`, `expired` and `end_date_changed` itself; the others are reported to it.
 */
export const TRAIL_EVENTS = [
  'sealed',
  'notified',
  'code_sent',
  'sign_in_succeeded',
  'sign_in_failed',
  'opened',
  'attachment_downloaded',
  'reply_sent',
  'withdrawn',
  'expired',
  'end_date_changed',
] as const;
export type TrailEventName = (typeof TRAIL_EVENTS)[number];

/** The events the auth service and the exchange report through POST /v1/sealed/{id}/events. */
export const REPORTED_TRAIL_EVENTS = [
  'notified',
  'code_sent',
  'sign_in_succeeded',
  'sign_in_failed',
  'opened',
  'attachment_downloaded',
  'reply_sent',
] as const satisfies readonly TrailEventName[];
export type ReportedTrailEventName = (typeof REPORTED_TRAIL_EVENTS)[number];

export const TrailEventSchema = Type.Union(
  TRAIL_EVENTS.map((name) => Type.Literal(name)) as Literals<typeof TRAIL_EVENTS>,
  { description: 'what happened (docs/specification.md#trail)' },
);
export const ReportedTrailEventSchema = Type.Union(
  REPORTED_TRAIL_EVENTS.map((name) => Type.Literal(name)) as Literals<typeof REPORTED_TRAIL_EVENTS>,
  { description: 'what the reporting service saw (docs/specification.md#trail)' },
);

/** What an entry says beside its event; each key belongs to the events named in its description. */
export const TrailDetailSchema = Type.Object(
  {
    method: Type.Optional(signInMethodSchema({ description: '`code_sent`: how the code went out' })),
    destination: Type.Optional(
      Type.String({ maxLength: 254, description: '`code_sent`: where it went, masked (`+41 ** *** ** 67`, `b***@…`)' }),
    ),
    attachment: Type.Optional(
      Type.String({ maxLength: 1000, description: "`attachment_downloaded`: the attachment's file name" }),
    ),
    scope: Type.Optional(
      Type.Union([Type.Literal('everyone'), Type.Literal('recipient')], {
        description: "`withdrawn`: for everyone, or for the entry's recipient alone",
      }),
    ),
    reason: Type.Optional(Type.String({ maxLength: 500, description: '`withdrawn`: the reason given' })),
    expiresAt: Type.Optional(Type.String({ format: 'date-time', description: '`end_date_changed`: the new end date' })),
  },
  { additionalProperties: false, title: 'Trail entry detail' },
);
export type TrailDetail = Static<typeof TrailDetailSchema>;

const ClientSchema = Type.String({
  maxLength: 100,
  description: "the client's address, masked as the logs mask it",
});

/** POST /v1/sealed/{id}/events (service token): an event the auth service or the exchange saw. */
export const TrailEventBodySchema = Type.Object(
  {
    event: ReportedTrailEventSchema,
    recipient: Type.Optional(
      Type.String({
        minLength: 3,
        maxLength: 254,
        description: 'whom it concerns; normalised and compared case-insensitively',
      }),
    ),
    client: Type.Optional(ClientSchema),
    detail: Type.Optional(TrailDetailSchema),
  },
  { additionalProperties: false, title: 'Trail event' },
);
export const TrailEventAnswerSchema = Type.Object(
  {
    first: Type.Boolean({
      description:
        'no earlier entry of this event for this recipient (decided race-free, once per event and recipient)',
    }),
  },
  { title: 'Trail event recorded' },
);

export const TrailEntrySchema = Type.Object(
  {
    at: Type.String({ format: 'date-time' }),
    event: TrailEventSchema,
    recipient: Type.Optional(Type.String({ description: 'whom it concerns; absent for the message itself' })),
    client: Type.Optional(ClientSchema),
    detail: Type.Optional(TrailDetailSchema),
  },
  { title: 'Trail entry' },
);

/** GET /v1/admin/sealed/{id}/trail and GET /v1/senders/{sender}/sealed/{id}/trail as JSON. */
export const TrailSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'sealed-message id' }),
    trail: Type.Array(TrailEntrySchema, { description: 'in the order written' }),
  },
  { title: 'Trail of a sealed message' },
);
/** The CSV form's header row; each later row one entry, `detail` as compact JSON. */
export const TRAIL_CSV_COLUMNS = ['at', 'event', 'recipient', 'client', 'detail'] as const;

export const SenderParams = Type.Object({
  sender: Type.String({
    minLength: 3,
    maxLength: 254,
    description: 'the address the sender proved; compared after normalisation and case-insensitively',
  }),
});
export const SenderSealedParams = Type.Object({
  sender: SenderParams.properties.sender,
  id: SealedParams.properties.id,
});

export const SenderSealedQuery = Type.Object(
  {
    limit: RecipientLookupQuery.properties.limit,
    before: RecipientLookupQuery.properties.before,
    q: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 254,
        description: "only messages with this text in a recipient's address or the subject, case-insensitive",
      }),
    ),
  },
  { additionalProperties: false },
);

const optionalTime = (description: string) => Type.Optional(Type.String({ format: 'date-time', description }));

/** One recipient as the sender sees them: the times and counts derived from the trail. */
export const SenderRecipientSchema = Type.Object({
  email: Type.String(),
  method: Type.Optional(MethodSchema),
  mobileSource: Type.Optional(MobileSourceSchema),
  withdrawnAt: optionalTime('when the message was withdrawn for this recipient alone'),
  notifiedAt: optionalTime('when their notification was first handed to the relay or the outbox'),
  firstOpenedAt: optionalTime('when they first read the message'),
  lastOpenedAt: optionalTime('when they last read it'),
  failedSignIns: Type.Integer({ minimum: 0, description: 'codes that were wrong or expired' }),
  downloads: Type.Integer({ minimum: 0, description: 'attachments downloaded' }),
  replies: Type.Integer({ minimum: 0, description: 'replies sent' }),
});

/** A message entry of the sender's API. */
export const SenderSealedSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    subject: Type.String(),
    sealedAt: Type.String({ format: 'date-time' }),
    expiresAt: Type.Optional(ExpiresAtSchema),
    end: Type.Optional(SealEndSchema),
    recipients: Type.Array(SenderRecipientSchema),
  },
  { title: "Sender's sealed message" },
);
export const SenderSealedListSchema = Type.Object(
  { sealed: Type.Array(SenderSealedSchema, { description: 'newest first' }) },
  { title: "Sender's sealed messages" },
);

/** PUT /v1/senders/{sender}/sealed/{id}/expiry (service token). */
export const ExpiryBodySchema = Type.Object(
  {
    expiresAt: Type.String({
      format: 'date-time',
      description: 'the new end date (RFC 3339): after now and within SEAL_MAX_EXPIRY of sealedAt',
    }),
  },
  { additionalProperties: false, title: 'End date' },
);

/** PUT /v1/recipients/{email}/mobile (service token): the auth service reports a number the recipient proved. */
export const ConfirmedMobileBodySchema = Type.Object(
  {
    mobile: Type.String({ maxLength: 64, description: 'the number the recipient proved with a code to it (E.164)' }),
    messageId: Type.Optional(
      Type.String({ format: 'uuid', description: 'the sealed message the recipient was reading when they proved it' }),
    ),
    replaces: Type.Optional(
      Type.String({
        maxLength: 64,
        description: 'a mobile change: the number it replaces (a header still naming it gives way to the new one)',
      }),
    ),
  },
  { additionalProperties: false },
);
export const ConfirmedMobileSchema = Type.Object(
  {
    email: Type.String(),
    mobile: Type.String({ description: 'E.164' }),
    confirmedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'Number a recipient confirmed' },
);

/** POST /v1/recipients/numbers (service token): which recipients have a number on record, and from where. */
export const RecipientNumbersBodySchema = Type.Object(
  {
    recipients: Type.Array(Type.String({ minLength: 3, maxLength: 254 }), {
      minItems: 1,
      maxItems: 10_000,
      description: 'the addresses to look up (normalised and compared case-insensitively)',
    }),
  },
  { additionalProperties: false },
);
export const RecipientNumbersSchema = Type.Object(
  {
    recipients: Type.Array(
      Type.Object({
        email: Type.String({ description: 'the address as asked' }),
        mobileSource: Type.Optional(
          Type.Union([Type.Literal('confirmed'), Type.Literal('directory')], {
            description: 'where its number would come from at sealing; absent: none (an email code)',
          }),
        ),
      }),
      { description: 'in the order asked' },
    ),
  },
  { title: 'Numbers on record for recipients' },
);
