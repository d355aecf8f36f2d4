import type { Kysely } from 'kysely';
import { createRegistry } from '../kernel/metrics.ts';
import { durationToMs } from '../kernel/duration.ts';
import { startHttpService, type ServiceDefinition } from '../kernel/service.ts';
import { loadDkimSigner } from '../kernel/dkim.ts';
import { startDeliveryEngine } from './delivery/engine.ts';
import { MessageIntake } from './inbound/accept.ts';
import { startInboundSmtpServer } from './inbound/smtp-server.ts';
import { createExchangeMetrics } from './metrics.ts';
import { checkOutboundRegistry, OUTBOUND_STRATEGIES, type OutboundRegistry, strategyNames } from './outbound/registry.ts';
import { migrations } from './migrations/index.ts';
import { QueueView } from './queue/view.ts';
import { exchangePlugin } from './plugin.ts';
import { createStarterRules } from './rules/starter.ts';
import { RuleStore } from './rules/store.ts';
import { StatusHistory } from './status/history.ts';
import type { ExchangeTables } from './tables.ts';

/** Component C: accepts, stores temporarily and routes messages. */
export const exchangeService: ServiceDefinition = createExchangeService();

/**
 * The exchange with a registry of outbound strategies other than the shipped one: how a test runs a
 * strategy that Sealpost does not ship.
 */
export function createExchangeService(options: { outboundStrategies?: OutboundRegistry } = {}): ServiceDefinition {
  const outboundStrategies = checkOutboundRegistry(options.outboundStrategies ?? OUTBOUND_STRATEGIES);
  return {
    name: 'exchange',
    migrations: { schema: 'exchange', migrations },
    async start(context) {
      const { config } = context;
      const logger = context.logger.child({ service: 'exchange' });
      const db = context.database.db.withSchema('exchange') as Kysely<ExchangeTables>;
      const registry = createRegistry('exchange');
      const metrics = createExchangeMetrics(registry);
      const queue = new QueueView(db);
      queue.registerMetrics(registry);
      const rules = new RuleStore(db);
      const intake = new MessageIntake({ db, objects: context.objects, rules, logger });

      // A DKIM key that cannot be used stops start-up before anything listens.
      const dkim = await loadDkimSigner(config.exchange.dkim);
      if (dkim) logger.info({ domain: dkim.domain, selector: dkim.selector, algorithm: dkim.algorithm }, 'outbound mail is DKIM-signed');

      await createStarterRules(db, { embedded: context.embedded ?? false, production: config.production, logger });

      // SMTP first: its TLS files are checked before anything listens, so a bad one stops start-up cleanly.
      const smtp = await startInboundSmtpServer({
        config,
        intake,
        metrics,
        logger,
        drainTimeoutMs: durationToMs(config.shutdownTimeout) / 2,
      });
      const http = await startHttpService({
        name: 'exchange',
        title: 'Sealpost exchange engine (C)',
        description:
          `Accepts messages over SMTP and JSON, stores them, routes them by prioritised delivery rules to ${strategyNames(outboundStrategies).join(' or ')}. ` +
          'Rules: lower priority runs first, ties in creation order; the first rule whose params match wins. ' +
          'With no matching rule a message is refused with a temporary error (SMTP 451, HTTP 503).',
        port: config.exchange.port,
        context,
        registry,
        plugin: exchangePlugin,
        pluginOptions: {
          rules,
          intake,
          adminToken: config.adminToken,
          serviceToken: config.serviceToken,
          statusHistory: new StatusHistory(db),
          inboundLimits: { maxMessageSize: config.exchange.smtpMaxMessageSize, maxRecipients: config.exchange.smtpMaxRecipients },
          queue,
          outboundStrategies,
        },
      }).catch(async (error: unknown) => {
        await smtp.close();
        throw error;
      });
      // Workers start once the API is up; they stop after it, before the caller closes the database.
      const delivery = startDeliveryEngine({ config, db, objects: context.objects, intake, metrics, logger, dkim, outboundStrategies });
      return {
        ...http,
        listening: { ...http.listening, smtp: smtp.url },
        // Mail first: no new message is taken while the HTTP side winds down.
        async stop() {
          await smtp.close();
          await http.stop();
          await delivery.stop();
        },
      };
    },
  };
}
