import { Type } from 'typebox';
import type { App } from '../../kernel/http.ts';
import { requireBearer } from '../../kernel/bearer.ts';
import type { OutboundRegistry } from '../outbound/registry.ts';
import { badRequest } from '../../kernel/errors.ts';
import { normalizeEmail } from '../../kernel/email.ts';
import { byRule, decide, needsHeaders, sampleHeaders, subjectStrip } from './criteria.ts';
import {
  MatchAnswerSchema,
  MatchSampleSchema,
  RuleIdParams,
  ruleSchemas,
  type MatchAnswer,
  type MatchSample,
  type RuleBody,
} from './schemas.ts';
import { ruleView, type RuleStore } from './store.ts';

const errors = {
  400: Type.Ref('ErrorObject'),
  401: Type.Ref('ErrorObject'),
  404: Type.Ref('ErrorObject'),
};

/** The delivery configuration API (docs/specification.md#exchange-endpoints), admin token. */
export async function ruleRoutes(
  app: App,
  options: { rules: RuleStore; adminToken: string; outboundStrategies: OutboundRegistry },
) {
  const { rules } = options;
  // Bodies are checked against this exchange's strategies; RuleBody's type knows the shipped ones, which
  // they are except in tests that start an exchange with one of their own.
  const { body: RuleBodySchema, stored: RuleSchema } = ruleSchemas(options.outboundStrategies);
  const common = { tags: ['delivery rules'], security: [{ adminToken: [] }] };
  const onRequest = requireBearer(options.adminToken, 'admin');

  app.post(
    '/v1/config',
    {
      onRequest,
      schema: {
        ...common,
        summary: 'Create a delivery rule',
        body: RuleBodySchema,
        response: { 201: RuleSchema, ...errors },
      },
    },
    async (request, reply) => {
      const rule = await rules.create(request.body as RuleBody);
      request.log.info({ ruleId: rule.id, name: rule.name }, 'delivery rule created');
      return reply.code(201).send(ruleView(rule));
    },
  );
  app.get(
    '/v1/config',
    {
      onRequest,
      schema: {
        ...common,
        summary: 'List delivery rules in execution order',
        response: { 200: Type.Object({ rules: Type.Array(RuleSchema) }), 401: errors[401] },
      },
    },
    async () => ({ rules: (await rules.list()).map(ruleView) }),
  );
  app.post(
    '/v1/config/match',
    {
      onRequest,
      schema: {
        ...common,
        summary: 'Dry run: which rule takes each recipient of a sample message',
        description:
          'Matches the sample as the intake would, per recipient, with the rules as they are now; nothing is sent ' +
          'or stored. A message whose recipients fall to different rules is split into one envelope per rule.',
        body: MatchSampleSchema,
        response: { 200: MatchAnswerSchema, 400: errors[400], 401: errors[401] },
      },
    },
    async (request) => dryRun(rules, request.body as MatchSample),
  );
  app.get(
    '/v1/config/:id',
    {
      onRequest,
      schema: {
        ...common,
        summary: 'Read a delivery rule',
        params: RuleIdParams,
        response: { 200: RuleSchema, ...errors },
      },
    },
    async (request) => ruleView(await rules.get(request.params.id)),
  );
  app.put(
    '/v1/config/:id',
    {
      onRequest,
      schema: {
        ...common,
        summary: 'Replace a delivery rule',
        params: RuleIdParams,
        body: RuleBodySchema,
        response: { 200: RuleSchema, ...errors },
      },
    },
    async (request) => {
      const rule = await rules.update(request.params.id, request.body as RuleBody);
      request.log.info({ ruleId: rule.id }, 'delivery rule updated');
      return ruleView(rule);
    },
  );
  app.delete(
    '/v1/config/:id',
    {
      onRequest,
      schema: {
        ...common,
        summary: 'Delete a delivery rule',
        params: RuleIdParams,
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await rules.delete(request.params.id);
      request.log.info({ ruleId: request.params.id }, 'delivery rule deleted');
      return reply.code(204).send(null);
    },
  );
}

/** POST /v1/config/match: the intake's decision for a sample (rules/criteria.ts), from the rules as they are now. */
async function dryRun(rules: RuleStore, sample: MatchSample): Promise<MatchAnswer> {
  if (sample.sender !== '' && !normalizeEmail(sample.sender)) {
    throw badRequest(`sender ${JSON.stringify(sample.sender)} is not a valid email address`);
  }
  for (const [index, recipient] of sample.recipients.entries()) {
    if (!normalizeEmail(recipient)) {
      throw badRequest(`recipients[${index}] ${JSON.stringify(recipient)} is not a valid email address`);
    }
  }
  const candidates = await rules.forChannel(sample.channel);
  const headers = needsHeaders(candidates) ? sampleHeaders(sample.subject, sample.headers ?? []) : undefined;
  const decisions = decide(candidates, { ...sample, headers });
  const refused = decisions.some((decision) => !decision.rule);
  return {
    recipients: decisions.map(({ recipient, rule, misses }) => {
      if (!rule) {
        return {
          recipient,
          reason: candidates.length
            ? `no rule applies: ${misses.join('; ')}`
            : `no delivery rule exists for channel ${sample.channel}`,
        };
      }
      const strip = subjectStrip(rule.criteria);
      return {
        recipient,
        rule: { id: rule.id, name: rule.name, priority: rule.priority },
        outbound: rule.outbound,
        ...(strip ? { stripSubjectTag: strip } : {}),
      };
    }),
    envelopes: refused ? 0 : byRule(decisions).length,
  };
}
