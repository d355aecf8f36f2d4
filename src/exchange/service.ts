import type { Kysely } from 'kysely';
import { systemClock } from '../kernel/clock.ts';
import { createRegistry } from '../kernel/metrics.ts';
import { objectsOf, startHttpService, type ServiceDefinition } from '../kernel/service.ts';
import { loadDkimSigner } from '../kernel/dkim.ts';
import { startDeliveryEngine } from './delivery/engine.ts';
import { MessageIntake } from './inbound/accept.ts';
import { SealNumbers } from './inbound/sms-required.ts';
import { RecentPayloads } from './recent-payloads.ts';
import { startInboundSmtpServer } from './inbound/smtp-server.ts';
import { createExchangeMetrics } from './metrics.ts';
import {
  checkOutboundRegistry,
  OUTBOUND_STRATEGIES,
  type OutboundRegistry,
  strategyNames,
} from './outbound/registry.ts';
import { migrations } from './migrations/index.ts';
import { QueueView } from './queue/view.ts';
import { QueueActions } from './queue/actions.ts';
import { exchangePlugin } from './plugin.ts';
import { createStarterRules } from './rules/starter.ts';
import { RuleStore } from './rules/store.ts';
import { StatusHistory } from './status/history.ts';
import type { ExchangeTables } from './tables.ts';
import type { ExchangeConfig } from './config.ts';

/** Component C: accepts, stores temporarily and routes messages. */
export const exchangeService: ExchangeServiceDefinition = createExchangeService();

export type ExchangeServiceDefinition = ServiceDefinition<'exchange', ExchangeConfig>;

/**
 * The exchange with a registry of outbound strategies other than the shipped one: how a test runs a
 * strategy that Sealpost does not ship.
 */
export function createExchangeService(
  options: { outboundStrategies?: OutboundRegistry } = {},
): ExchangeServiceDefinition {
  const outboundStrategies = checkOutboundRegistry(options.outboundStrategies ?? OUTBOUND_STRATEGIES);
  return {
    name: 'exchange',
    migrations: { schema: 'exchange', migrations },
    usesObjects: true,
    async start(context) {
      const { config, settings } = context;
      const logger = context.logger.child({ service: 'exchange' });
      const db = context.database.db.withSchema('exchange') as Kysely<ExchangeTables>;
      const clock = context.clock ?? systemClock;
      const registry = createRegistry('exchange');
      const metrics = createExchangeMetrics(registry);
      const queue = new QueueView(db, clock);
      queue.registerMetrics(registry);
      const rules = new RuleStore(db, {
        snapshotTtlMs: settings.smtpRuleCacheTtl,
        // MAIL FROM asks PostgreSQL itself when the snapshot cannot be read; that answer is the one logged.
        onSnapshotError: (err) => logger.debug({ err }, 'could not read the delivery rules for MAIL FROM'),
      });
      // Only an instance that delivers has a use for the bytes of what it accepted.
      const { enabled, payloadCache } = settings.delivery;
      const recentPayloads = enabled && payloadCache > 0 ? new RecentPayloads(payloadCache) : undefined;
      const intake = new MessageIntake({
        db,
        objects: objectsOf(context),
        rules,
        logger,
        recentPayloads,
        ...(settings.signInRequireSms
          ? {
              smsRequired: new SealNumbers({ baseUrl: settings.sealUrl, serviceToken: config.serviceToken }),
              onMobileRequired: (channel) => metrics.mobileRequired.inc({ channel }),
            }
          : {}),
      });

      // A DKIM key that cannot be used stops start-up before anything listens.
      const dkim = await loadDkimSigner(settings.dkim);
      if (dkim)
        logger.info(
          { domain: dkim.domain, selector: dkim.selector, algorithm: dkim.algorithm },
          'outbound mail is DKIM-signed',
        );

      await createStarterRules(db, { embedded: context.embedded ?? false, production: config.production, logger });

      // SMTP first: its TLS files are checked before anything listens, so a bad one stops start-up cleanly.
      const smtp = await startInboundSmtpServer({
        config,
        settings,
        intake,
        metrics,
        logger,
        drainTimeoutMs: config.shutdownTimeout / 2,
      });
      const http = await startHttpService({
        name: 'exchange',
        title: 'Sealpost exchange engine (C)',
        description:
          'Accepts messages over SMTP and JSON, stores them, routes them by prioritised ' +
          `delivery rules to ${strategyNames(outboundStrategies).join(' or ')}. Rules: ` +
          'lower priority runs first, ties in creation order; the first rule whose params match wins. ' +
          'With no matching rule a message is refused with a temporary error (SMTP 451, HTTP 503).',
        port: settings.port,
        portVariable: 'EXCHANGE_PORT',
        context,
        registry,
        plugin: exchangePlugin,
        pluginOptions: {
          rules,
          intake,
          adminToken: config.adminToken,
          serviceToken: config.serviceToken,
          statusHistory: new StatusHistory(db),
          inboundLimits: { maxMessageSize: settings.smtpMaxMessageSize, maxRecipients: settings.smtpMaxRecipients },
          queue,
          queueActions: new QueueActions(db, { objects: objectsOf(context), rules, logger, clock }),
          outboundStrategies,
        },
      }).catch(async (error: unknown) => {
        await smtp.close();
        throw error;
      });
      // Workers start once the API is up; they stop after it, before the caller closes the database.
      const delivery = startDeliveryEngine({
        config,
        settings,
        db,
        objects: objectsOf(context),
        intake,
        metrics,
        logger,
        dkim,
        outboundStrategies,
        recentPayloads,
        clock,
      });
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
