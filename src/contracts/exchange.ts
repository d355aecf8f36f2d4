/**
 * The exchange engine's JSON intake (POST /v1/messages) as both sides see it: the engine validates and
 * documents requests with this schema, and the auth service, which hands replies in, takes its types from
 * it. Types and schemas only: no service code (see contracts/seal.ts).
 */
import { Type, type Static } from 'typebox';
import { LANGUAGES } from '../kernel/languages.ts';

export interface InboundLimits {
  /** SMTP_MAX_MESSAGE_SIZE: the built (or raw) message, in bytes. */
  maxMessageSize: number;
  /** SMTP_MAX_RECIPIENTS: to, cc and bcc together. */
  maxRecipients: number;
}

// Header values must stay on one line: no CR, LF or other control characters (tab is fine), so no
// field of the request can start a header of its own (header injection).
const ONE_LINE = '^[^\\x00-\\x08\\x0A-\\x1F\\x7F]*$';
/**
 * Base64 fields are checked in code (`decodeBase64`), not by a schema pattern: Ajv's unicode-mode
 * regex for canonical base64 recurses per 4-character group and overflows the stack past ~4 MB.
 */
const BASE64 = { contentEncoding: 'base64' } as const;
const MESSAGE_ID = '^<[^<>\\s]+>$';
const TOKEN = "[A-Za-z0-9!#$&^_.+'-]+";
const CONTENT_TYPE = `^${TOKEN}/${TOKEN}(?:\\s*;\\s*${TOKEN}=(?:${TOKEN}|"[^"\\x00-\\x1F\\x7F]*"))*$`;

/**
 * The body of POST /v1/messages (docs/specification.md#json-message). Addresses are checked again in
 * code (normalisation, errorCode invalid_email), and so are the rules a schema says badly: either `raw`
 * or the structured fields, recipients[].email among the recipients, the total recipient count.
 * Bodies, attachments and raw carry no maxLength of their own: the route's body limit bounds the request,
 * and the built message is held to SMTP_MAX_MESSAGE_SIZE as it streams, so that too large is always a
 * 413 (payload_too_large) rather than sometimes a 400.
 */
export function messageBodySchema(limits: InboundLimits) {
  const address = (description: string) =>
    Type.String({ minLength: 3, maxLength: 320, pattern: ONE_LINE, description });
  const addresses = (description: string) =>
    Type.Array(address('an address, `bob@example.com` or `Bob Example <bob@example.com>`'), {
      maxItems: limits.maxRecipients,
      description,
    });
  return Type.Object(
    {
      from: address(
        'sender: the From header and the envelope sender that delivery rules match ' +
          '(`params.sender`) and bounces go to; `bob@example.com` or `Bob Example <bob@example.com>`',
      ),
      to: Type.Array(address('an address, `bob@example.com` or `Bob Example <bob@example.com>`'), {
        minItems: 1,
        maxItems: limits.maxRecipients,
        description: 'recipients in the To header (with `raw`: envelope recipients only)',
      }),
      cc: Type.Optional(addresses('recipients in the Cc header (with `raw`: envelope recipients only)')),
      bcc: Type.Optional(addresses('envelope recipients that appear in no header')),
      subject: Type.Optional(
        Type.String({ maxLength: 998, pattern: ONE_LINE, description: 'required unless `raw` is given' }),
      ),
      text: Type.Optional(Type.String({ description: 'plain-text body' })),
      html: Type.Optional(Type.String({ description: 'HTML body' })),
      inReplyTo: Type.Optional(
        Type.String({
          maxLength: 998,
          pattern: MESSAGE_ID,
          description: 'Message-ID this message answers, `<id@host>`',
        }),
      ),
      references: Type.Optional(
        Type.Array(Type.String({ maxLength: 998, pattern: MESSAGE_ID }), {
          maxItems: 100,
          description: 'Message-IDs of the thread, oldest first',
        }),
      ),
      attachments: Type.Optional(
        Type.Array(
          Type.Object(
            {
              filename: Type.String({ minLength: 1, maxLength: 255, pattern: ONE_LINE }),
              contentType: Type.Optional(
                Type.String({
                  maxLength: 255,
                  pattern: CONTENT_TYPE,
                  description: 'MIME type; guessed from the filename when absent',
                }),
              ),
              content: Type.String({ ...BASE64, description: 'the file, base64 without line breaks' }),
            },
            { additionalProperties: false },
          ),
          { maxItems: 100 },
        ),
      ),
      recipients: Type.Optional(
        Type.Array(
          Type.Object(
            {
              email: address('one of the addresses in to, cc or bcc'),
              mobile: Type.Optional(
                Type.String({
                  minLength: 3,
                  maxLength: 32,
                  pattern: ONE_LINE,
                  description: 'mobile number in international format (+41 79 123 45 67); stored as E.164',
                }),
              ),
              language: Type.Optional(
                Type.Enum([...LANGUAGES], {
                  description:
                    "the language of this recipient's notification, " +
                    'email codes and reader link; absent: NOTIFY_DEFAULT_LANGUAGE',
                }),
              ),
            },
            { additionalProperties: false },
          ),
          {
            maxItems: limits.maxRecipients,
            description:
              'per recipient, a mobile number for SMS sign-in (docs/design.md#recipients) and/or a language; each ' +
              'becomes an `X-Sealpost-Mobile: <email>=<E.164>` or `X-Sealpost-Language: <email>=<language>` header',
          },
        ),
      ),
      expires: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 64,
          pattern: ONE_LINE,
          description:
            'how long the sealed message may be read (docs/specification.md#end-dates): a life from the moment ' +
            'it is sealed (`7d`, `72h`, `1d12h`) or an RFC 3339 time with its offset (`2027-01-31T17:00:00+01:00`); ' +
            'becomes the `X-Sealpost-Expires` header (with `raw` too, which then must not carry one of its own). ' +
            'A malformed value or a time already past is refused with 400 validation_failed naming it; absent: ' +
            "the organisation's SEAL_DEFAULT_EXPIRY, and SEAL_MAX_EXPIRY caps both",
        }),
      ),
      raw: Type.Optional(
        Type.String({
          minLength: 4,
          ...BASE64,
          description:
            'a complete RFC 5322 message, base64; stored unchanged but for CRLF line ends ' +
            '(X-Sealpost-Mobile and X-Sealpost-Language headers from `recipients`, X-Sealpost-Expires from ' +
            '`expires` go in front); its own X-Sealpost-Expires header is checked like `expires`. ' +
            'Excludes subject, text, html, attachments, inReplyTo and references',
        }),
      ),
    },
    { additionalProperties: false, title: 'Inbound JSON message' },
  );
}

export type MessageBody = Static<ReturnType<typeof messageBodySchema>>;

export const MessageAcceptedSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'envelope id; GET /v1/messages/{id}/status shows its history' }),
    status: Type.Literal('accepted'),
    parts: Type.Optional(
      Type.Array(Type.String({ format: 'uuid' }), {
        description:
          'only when the recipients fell to different delivery rules: the id of every envelope the message ' +
          'became, `id` first; each has its own status history',
      }),
    ),
  },
  { title: 'Message accepted' },
);
