import { join, resolve } from 'node:path';
import type { Kysely } from 'kysely';
import type { Clock } from '../../kernel/clock.ts';
import type { SharedConfig } from '../../kernel/config.ts';
import type { ExchangeConfig } from '../config.ts';
import type { DkimSigner } from '../../kernel/dkim.ts';
import type { Logger } from '../../kernel/logger.ts';
import { DELETE_MANY_MAX, type ObjectStore } from '../../kernel/objects/index.ts';
import type { Intake } from '../handoff.ts';
import type { RecentPayloads } from '../recent-payloads.ts';
import type { ExchangeMetrics } from '../metrics.ts';
import { createMailTransport } from '../outbound/mail-transport.ts';
import { createOutboundStrategies, type OutboundRegistry } from '../outbound/registry.ts';
import { startStatusArchive } from '../status/archive.ts';
import type { ExchangeTables } from '../tables.ts';
import { deliverClaim } from './deliver.ts';
import { OrphanPayloadSweep } from './orphans.ts';
import { every } from './periodic.ts';
import { EnvelopeQueue } from './queue.ts';
import { EnvelopeFinisher } from './retention.ts';
import { startDelivery, type DeliveryWorkers } from './worker.ts';

export interface DeliveryEngine {
  workers: DeliveryWorkers;
  /** Stops claiming, waits for deliveries in flight, stops the archive job, closes relay connections. */
  stop(): Promise<void>;
}

/**
 * Everything behind delivery (docs/design.md#delivery) for one engine instance, from configuration: the mail
 * transport (relay or outbox), the registry's outbound strategies, the queue and its workers, the status archive.
 */
export function startDeliveryEngine(deps: {
  config: SharedConfig;
  settings: ExchangeConfig;
  db: Kysely<ExchangeTables>;
  objects: ObjectStore;
  intake: Pick<Intake, 'accept' | 'onAccepted'> & Partial<Pick<Intake, 'recentlyBusy'>>;
  metrics: ExchangeMetrics;
  logger: Logger;
  /** DKIM_*: signs notifications, bounces and relayed mail whose From is in DKIM_DOMAIN. */
  dkim?: DkimSigner;
  outboundStrategies: OutboundRegistry;
  /** Small payloads this instance accepted, delivered from memory instead of read back from the store. */
  recentPayloads?: RecentPayloads;
  clock: Clock;
}): DeliveryEngine {
  const { config, settings, db, objects, metrics } = deps;
  const { delivery, statusArchive } = settings;
  const logger = deps.logger.child({ component: 'delivery' });
  const leaseMs = delivery.lease;

  const transport = createMailTransport({
    outboundSmtpUrl: settings.outboundSmtpUrl,
    outboxDir: join(resolve(config.dataDir), 'outbox'),
    maxConnections: delivery.concurrency,
    hostname: settings.smtpHostname,
  });
  logger.info(
    { transport: transport.kind, to: transport.description },
    transport.kind === 'relay'
      ? 'outbound mail goes to the relay'
      : 'no OUTBOUND_SMTP_URL: outbound mail is written as .eml files to the outbox',
  );
  const strategies = createOutboundStrategies(deps.outboundStrategies, {
    config,
    settings,
    transport,
    dkim: deps.dkim,
    logger,
  });
  const queue = new EnvelopeQueue(db, leaseMs, deps.clock);
  const finisher = new EnvelopeFinisher({
    queue,
    objects,
    intake: deps.intake,
    metrics,
    logger,
    reportingMta: settings.smtpHostname,
    notifyFrom: settings.notifyFrom,
    noticeRecipient: settings.bounceNoticeRecipient,
    intakeBusy: deps.intake.recentlyBusy ? () => deps.intake.recentlyBusy!() : undefined,
    // Clean-ups (payload deletes, row removals) run behind the deliveries, up to one DeleteObjects call's
    // worth of keys at once; the rest wait their turn (EnvelopeFinisher.finishSoon).
    maxRunning: Math.max(delivery.concurrency, DELETE_MANY_MAX),
  });
  const retry = {
    maxRetries: delivery.maxRetries,
    baseMs: delivery.retryBase,
    maxMs: delivery.retryMax,
  };
  const workers = delivery.enabled
    ? startDelivery({
        queue,
        finisher,
        deliver: (claim) =>
          deliverClaim(claim, {
            queue,
            objects,
            recentPayloads: deps.recentPayloads,
            strategies,
            finisher,
            metrics,
            logger,
            retry,
          }),
        intakeBusy: deps.intake.recentlyBusy ? () => deps.intake.recentlyBusy!() : undefined,
        concurrency: delivery.concurrency,
        pollIntervalMs: delivery.pollInterval,
        leaseMs,
        logger,
      })
    : heldDelivery(logger);
  // Mail this instance takes (and the bounces it writes) is claimed at once, not at the next poll.
  deps.intake.onAccepted(() => workers.wake());
  // What an intake or a clean-up cut short leaves behind (a crash, kill -9): payloads without a row.
  const orphans = new OrphanPayloadSweep({
    db,
    objects,
    graceMs: leaseMs,
    logger,
    deleting: (key) => finisher.deleting(key),
  });
  const orphanSweep = every(leaseMs, async () => {
    try {
      await orphans.sweep();
    } catch (error) {
      logger.warn({ err: error }, 'sweep of orphan payloads failed; will try again');
    }
  });
  const archive = startStatusArchive({
    db,
    settings: { afterMs: statusArchive.after, retentionMs: statusArchive.retention },
    intervalMs: statusArchive.interval,
    clock: deps.clock,
    logger: deps.logger.child({ component: 'status-archive' }),
  });

  return {
    workers,
    async stop() {
      await workers.stop();
      await finisher.drain();
      await orphanSweep.stop();
      await archive.stop();
      await transport.close();
    },
  };
}

/** DELIVERY_ENABLED=false: no claims, so the mail waits for an instance that delivers. */
function heldDelivery(logger: Logger): DeliveryWorkers {
  logger.info(
    'delivery disabled on this instance (DELIVERY_ENABLED=false): ' +
      'mail is taken and left for the instances that deliver',
  );
  return { inFlight: 0, wake() {}, async stop() {} };
}
