import { Type, type Static } from 'typebox';

export const ChannelSchema = Type.Union([Type.Literal('smtp'), Type.Literal('json')], {
  description: 'inbound channel the rule matches: `smtp` (the SMTP server) or `json` (POST /v1/messages)',
});
export const OutboundSchema = Type.Union([Type.Literal('seal'), Type.Literal('smtp')], {
  description: '`seal`: sealed onto IPFS and each recipient notified with a reader link; `smtp`: relayed unchanged',
});

export const RuleBodySchema = Type.Object(
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
                  'matches only messages whose envelope sender equals this address after normalisation (trimmed, domain lower-cased, IDN as punycode), compared case-insensitively; absent: every sender',
              }),
            ),
          },
          { additionalProperties: false, description: 'what a message must match' },
        ),
        outbound: Type.Array(OutboundSchema, {
          minItems: 1,
          maxItems: 2,
          uniqueItems: true,
          description: 'outbound paths the message takes, all of them',
        }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, title: 'Delivery configuration rule' },
);
export type RuleBody = Static<typeof RuleBodySchema>;

export const RuleSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    priority: Type.Integer(),
    configuration: Type.Object({
      params: Type.Object({ channel: ChannelSchema, sender: Type.Optional(Type.String()) }),
      outbound: Type.Array(OutboundSchema),
    }),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { title: 'Stored delivery configuration rule' },
);
export type RuleView = Static<typeof RuleSchema>;

export const RuleIdParams = Type.Object({ id: Type.String({ format: 'uuid', description: 'rule id' }) });
