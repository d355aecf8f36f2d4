import { Type, type Static, type TLiteral, type TUnion } from 'typebox';
import { OUTBOUND_STRATEGIES } from '../outbound/registry.ts';
import type { OutboundStrategyDefinition } from '../outbound/types.ts';

export const ChannelSchema = Type.Union([Type.Literal('smtp'), Type.Literal('json')], {
  description: 'inbound channel the rule matches: `smtp` (the SMTP server) or `json` (POST /v1/messages)',
});

const domainList = (whose: string) =>
  Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 254, pattern: '^!?[^\\s@!]+$' }), {
      minItems: 1,
      maxItems: 100,
      uniqueItems: true,
      description:
        `${whose} domains; a domain matches itself and its subdomains, a leading \`!\` means "any domain but" ` +
        `(\`["!org.example"]\`: outside org.example); one plain entry (if any) and no \`!\` entry must match. ` +
        'IDN domains compare as punycode',
    }),
  );

/** What a rule can match beyond channel and sender (rules/criteria.ts), all optional. */
const criteriaSchemas = {
  recipientDomains: domainList('recipient'),
  senderDomains: domainList('envelope sender'),
  subjectContains: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'text the Subject contains, compared case-insensitively after RFC 2047 decoding, e.g. `[secure]`',
    }),
  ),
  header: Type.Optional(
    Type.Object(
      {
        name: Type.String({ minLength: 1, maxLength: 100, pattern: '^[!-9;-~]+$', description: 'any case' }),
        value: Type.String({ maxLength: 998, description: 'the exact value, unfolded and trimmed' }),
      },
      { additionalProperties: false, description: 'a header the message carries, e.g. `X-Sealpost-Seal: yes`' },
    ),
  ),
};

/**
 * The rule schemas for an exchange's outbound strategies: their allowed values, descriptions and
 * `maxItems` (each strategy at most once) follow the registry, so a new strategy needs no edit here.
 */
export function ruleSchemas<Name extends string>(strategies: readonly OutboundStrategyDefinition<Name>[]) {
  // TypeBox derives a union's static type from a tuple only; a one-element tuple of the literal says the same as the
  // list.
  const outbound = Type.Union(
    strategies.map((strategy) => Type.Literal(strategy.name)),
    { description: strategies.map((strategy) => `\`${strategy.name}\`: ${strategy.description}`).join('; ') },
  ) as TUnion<[TLiteral<Name>]>;
  const body = Type.Object(
    {
      name: Type.String({ minLength: 1, maxLength: 200, description: 'rule name' }),
      priority: Type.Integer({
        minimum: -2147483648,
        maximum: 2147483647,
        description: 'lower numbers run first; rules with equal priority run in creation order',
      }),
      configuration: Type.Object(
        {
          params: Type.Object(
            {
              channel: ChannelSchema,
              sender: Type.Optional(
                Type.String({
                  minLength: 3,
                  maxLength: 254,
                  description:
                    'matches only messages whose envelope sender equals this address after normalisation (trimmed, ' +
                    'domain lower-cased, IDN as punycode), compared case-insensitively; absent: every sender',
                }),
              ),
              ...criteriaSchemas,
            },
            {
              additionalProperties: false,
              description:
                'what a message must match, every given field (AND); rules are matched per recipient, and a message ' +
                'whose recipients fall to different rules is split into one envelope per rule',
              examples: [
                { channel: 'smtp', subjectContains: '[secure]' },
                { channel: 'smtp', header: { name: 'X-Sealpost-Seal', value: 'yes' } },
                { channel: 'smtp', recipientDomains: ['!org.example'] },
              ],
            },
          ),
          outbound: Type.Array(outbound, {
            minItems: 1,
            maxItems: strategies.length,
            uniqueItems: true,
            description: 'outbound strategies the message takes, all of them, in this order',
          }),
          stripSubjectTag: Type.Optional(
            Type.Boolean({
              description:
                'removes the params.subjectContains text from the subject of every copy that leaves (relayed, ' +
                'sealed), so the recipient never sees the tag; the stored message keeps it',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    },
    { additionalProperties: false, title: 'Delivery configuration rule' },
  );
  const stored = Type.Object(
    {
      id: Type.String({ format: 'uuid' }),
      name: Type.String(),
      priority: Type.Integer(),
      configuration: Type.Object({
        params: Type.Object({ channel: ChannelSchema, sender: Type.Optional(Type.String()), ...criteriaSchemas }),
        outbound: Type.Array(outbound),
        stripSubjectTag: Type.Optional(Type.Boolean()),
      }),
      created_at: Type.String({ format: 'date-time' }),
      updated_at: Type.String({ format: 'date-time' }),
    },
    { title: 'Stored delivery configuration rule' },
  );
  return { body, stored };
}

const shipped = ruleSchemas(OUTBOUND_STRATEGIES);
export type RuleBody = Static<typeof shipped.body>;
export type RuleView = Static<typeof shipped.stored>;

export const RuleIdParams = Type.Object({ id: Type.String({ format: 'uuid', description: 'rule id' }) });

/** A dry run's sample message (POST /v1/config/match). */
export const MatchSampleSchema = Type.Object(
  {
    channel: ChannelSchema,
    sender: Type.String({ maxLength: 254, description: "the envelope sender (MAIL FROM); '' for the null sender <>" }),
    recipients: Type.Array(Type.String({ minLength: 3, maxLength: 254 }), {
      minItems: 1,
      maxItems: 1000,
      description: 'the envelope recipients (RCPT TO)',
    }),
    subject: Type.Optional(Type.String({ maxLength: 998, description: 'the Subject, RFC 2047 words allowed' })),
    headers: Type.Optional(
      Type.Array(
        Type.Object(
          {
            name: Type.String({ minLength: 1, maxLength: 100, pattern: '^[!-9;-~]+$' }),
            value: Type.String({ maxLength: 998 }),
          },
          { additionalProperties: false },
        ),
        { maxItems: 100, description: 'header fields of the message, in order' },
      ),
    ),
  },
  {
    additionalProperties: false,
    title: 'Rule match sample',
    examples: [
      {
        channel: 'smtp',
        sender: 'dana@org.example',
        recipients: ['colleague@org.example', 'customer@example.com'],
        subject: '[secure] The offer',
        headers: [{ name: 'X-Sealpost-Seal', value: 'yes' }],
      },
    ],
  },
);
export type MatchSample = Static<typeof MatchSampleSchema>;

export const MatchAnswerSchema = Type.Object(
  {
    recipients: Type.Array(
      Type.Object({
        recipient: Type.String(),
        rule: Type.Optional(
          Type.Object({ id: Type.String({ format: 'uuid' }), name: Type.String(), priority: Type.Integer() }),
        ),
        outbound: Type.Optional(Type.Array(Type.String(), { description: "the rule's outbound strategies" })),
        stripSubjectTag: Type.Optional(Type.String({ description: 'the subject text removed before delivery' })),
        reason: Type.Optional(
          Type.String({ description: "why no rule takes the recipient: each rule's first criterion that failed" }),
        ),
      }),
      { description: 'per recipient, in the order given: the rule that takes it, or why none does' },
    ),
    envelopes: Type.Integer({
      description:
        'how many envelopes the message becomes (one per rule); 0 when a recipient has no rule, as the ' +
        'message would then be refused',
    }),
  },
  { title: 'Rule match decisions' },
);
export type MatchAnswer = Static<typeof MatchAnswerSchema>;
