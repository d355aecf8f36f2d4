/**
 * The seal service's API as both sides see it: the service validates and documents its answers with these
 * schemas, and the auth service and the exchange check what they receive against the same ones
 * (`Value.Check`) and take their types from them. Types and schemas only: no service code, so that any
 * service may import this folder while none imports another service.
 */
import { type TLiteral, type TSchemaOptions, Type } from 'typebox';
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
