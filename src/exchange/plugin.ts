import type { App } from '../kernel/http.ts';
import type { MessageIntake } from './inbound/accept.ts';
import { jsonInboundRoutes } from './inbound/json-routes.ts';
import type { InboundLimits } from '../contracts/exchange.ts';
import type { OutboundRegistry } from './outbound/registry.ts';
import { ruleRoutes } from './rules/routes.ts';
import { queueRoutes } from './queue/routes.ts';
import type { QueueView } from './queue/view.ts';
import type { QueueActions } from './queue/actions.ts';
import type { RuleStore } from './rules/store.ts';
import type { StatusHistory } from './status/history.ts';
import { statusRoutes } from './status/routes.ts';

export interface ExchangePluginOptions {
  rules: RuleStore;
  intake: MessageIntake;
  adminToken: string;
  serviceToken: string;
  statusHistory: StatusHistory;
  inboundLimits: InboundLimits;
  queue: QueueView;
  queueActions: QueueActions;
  outboundStrategies: OutboundRegistry;
}

/** The exchange engine's HTTP API: delivery rules, JSON inbound, message status, the queue. */
export async function exchangePlugin(app: App, options: ExchangePluginOptions) {
  await app.register(ruleRoutes, {
    rules: options.rules,
    adminToken: options.adminToken,
    outboundStrategies: options.outboundStrategies,
  });
  await app.register(jsonInboundRoutes, {
    intake: options.intake,
    serviceToken: options.serviceToken,
    limits: options.inboundLimits,
  });
  await app.register(statusRoutes, {
    history: options.statusHistory,
    adminToken: options.adminToken,
    serviceToken: options.serviceToken,
  });
  await app.register(queueRoutes, {
    view: options.queue,
    actions: options.queueActions,
    adminToken: options.adminToken,
  });
}
