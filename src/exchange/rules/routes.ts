import { Type } from 'typebox';
import type { App } from '../../kernel/http.ts';
import { requireBearer } from '../../kernel/bearer.ts';
import type { OutboundRegistry } from '../outbound/registry.ts';
import { RuleIdParams, ruleSchemas, type RuleBody } from './schemas.ts';
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
