import { join, resolve } from 'node:path';
import type { Kysely } from 'kysely';
import type { Registry } from 'prom-client';
import { type Clock, systemClock } from '../kernel/clock.ts';
import type { SharedConfig } from '../kernel/config.ts';
import type { Logger } from '../kernel/logger.ts';
import { createRegistry } from '../kernel/metrics.ts';
import {
  objectsOf,
  type RunningService,
  type ServiceContext,
  type ServiceDefinition,
  startHttpService,
} from '../kernel/service.ts';
import { PendingCodes } from './codes/pending-codes.ts';
import { refusalLimit, sendLimit } from './codes/limits.ts';
import { ForbiddenTypes } from './attachments/file-type.ts';
import { DraftAttachments } from './attachments/upload.ts';
import { ClamdClient } from './clamd/client.ts';
import type { AuthContext } from './context.ts';
import { DraftStore } from './drafts/store.ts';
import { EndedDrafts } from './drafts/ended.ts';
import { ExpiredDraftsWatcher, type WatcherOptions } from './drafts/watcher.ts';
import { ExchangeClient } from './exchange/client.ts';
import { type CodeMailer, createCodeMailer } from './mail/code-mail.ts';
import { createSignInMethods } from './methods/registry.ts';
import { type AuthMetrics, createAuthMetrics } from './metrics.ts';
import { migrations } from './migrations/index.ts';
import type { App } from '../kernel/http.ts';
import { authPlugin, type AuthPluginOptions } from './plugin.ts';
import { prepareReaderPage } from './reader/assets.ts';
import { readerErrorPage, readerPageRoutes } from './reader/routes.ts';
import { ReplySender } from './replies/send.ts';
import { replyIdentityDomain } from './replies/identity.ts';
import { loadDkimSigner } from '../kernel/dkim.ts';
import { SealClient } from './seal/client.ts';
import { RecipientDirectory } from './seal/recipients.ts';
import { MessageAccess } from './sessions/access.ts';
import { MobileChangeNotices } from './mobile/notices.ts';
import { type AuthKeys, deriveKeys, resolveAuthSecret } from './secret.ts';
import { SessionCache } from './sessions/cache.ts';
import { startCleanup } from './sessions/cleanup.ts';
import { sessionCookie } from './sessions/cookie.ts';
import { SessionStore } from './sessions/store.ts';
import { SenderNotices } from './senders/notices.ts';
import { TrailReporter } from './trail/reporter.ts';
import { createSmsProvider, type SmsProvider } from './sms/index.ts';
import type { AuthTables } from './tables.ts';
import type { AuthConfig } from './config.ts';

type AuthContextIn = ServiceContext<AuthConfig>;
type AuthDb = Kysely<AuthTables>;

/** Component A: recipients sign in with a one-time code, read their sealed message and reply. */
export const authService: ServiceDefinition<'auth', AuthConfig> = {
  name: 'auth',
  migrations: { schema: 'auth', migrations },
  usesObjects: true,
  async start(context) {
    const { config, settings: auth } = context;
    const logger = context.logger.child({ service: 'auth' });
    const clock = context.clock ?? systemClock;
    const { provider, keys } = await loadProviderAndKeys(config, auth, logger);
    const db = context.database.db.withSchema('auth') as AuthDb;
    const registry = createRegistry('auth');
    const metrics = createAuthMetrics(registry);
    const stores = buildStores(db, auth, metrics);
    const clients = buildServiceClients(config, auth, db);
    const attachments = buildAttachments(context, stores.drafts, metrics, clock, logger);
    const replies = buildReplySender(context, stores.drafts, attachments, clients, clock);
    const retentionMs = auth.attachmentsRetentionPeriod;
    const endedDrafts = new EndedDrafts({ db, objects: objectsOf(context) });
    const mailer = await buildCodeMailer(config, auth, logger);
    const signIn = buildSignIn({ auth, provider, keys, sessions: stores.sessions, mailer, metrics, logger });
    const trail = new TrailReporter({
      seal: clients.seal,
      notices: new SenderNotices({
        mailer,
        seal: clients.seal,
        pageUrl: `${auth.publicUrl.replace(/\/+$/, '')}/sent`,
        language: auth.defaultLanguage,
      }),
      notifyOn: auth.notifySenderOn,
      trustProxyHops: auth.trustProxyHops,
    });
    const authContext: AuthContext = {
      clock,
      metrics,
      sessions: stores.sessions,
      codes: signIn.codes,
      sendLimit: stores.sendLimit,
      refusalLimit: stores.refusalLimit,
      seal: clients.seal,
      recipients: clients.recipients,
      access: new MessageAccess(db, clients.recipients, clients.seal),
      mobileNotices: new MobileChangeNotices({ provider, mailer, defaultLanguage: auth.defaultLanguage }),
      methods: signIn.methods,
      cookie: sessionCookie(auth.publicUrl),
      keys,
      trustProxyHops: auth.trustProxyHops,
      drafts: stores.drafts,
      endedDrafts,
      attachments,
      replies,
      trail,
      senderDomains: auth.senderDomains,
      settings: readerSettings(auth, stores.timeouts, retentionMs),
    };
    if (config.production && !authContext.cookie.secure) {
      logger.warn(
        { publicUrl: auth.publicUrl },
        'AUTH_PUBLIC_URL is plain http: session cookies are sent without Secure (meant for local development only)',
      );
    }
    const readerPage = await prepareReaderPage(logger);
    const http = await startAuthHttp(context, registry, authContext, readerPage).catch(async (error: unknown) => {
      await mailer.close();
      throw error;
    });
    const sessionChanges = stores.sessionCache?.follow(context.database, logger);
    const ended = { drafts: endedDrafts, seal: clients.seal };
    const housekeeping = startHousekeeping(context, db, stores, { retentionMs, ended }, clock, logger);
    return {
      ...http,
      async stop() {
        await http.stop();
        await trail.settled();
        await housekeeping.stop();
        await sessionChanges?.close();
        await mailer.close();
      },
    };
  },
};

/** Both refuse to start in production without a real provider and an explicit secret. */
async function loadProviderAndKeys(
  config: SharedConfig,
  auth: AuthConfig,
  logger: Logger,
): Promise<{ provider: SmsProvider; keys: AuthKeys }> {
  const provider = createSmsProvider(auth.sms, config.production, logger);
  const secret = await resolveAuthSecret(config, auth.secret);
  if (secret.source === 'generated') {
    const file = join(resolve(config.dataDir), 'auth-secret.key');
    logger.info({ file }, 'generated AUTH_SECRET into the data folder');
  }
  return { provider, keys: deriveKeys(secret.secret) };
}

function buildStores(db: AuthDb, auth: AuthConfig, metrics: AuthMetrics) {
  const timeouts = {
    idleMs: auth.session.idleTimeout,
    absoluteMs: auth.session.absoluteTimeout,
    rememberMeMs: auth.session.rememberMeMaxAge,
  };
  const sessionCache =
    auth.session.cacheSize > 0
      ? new SessionCache(
          { maxEntries: auth.session.cacheSize, ttlMs: auth.session.cacheTtl },
          {
            lookup: (result) => metrics.sessionLookups.inc({ result }),
            serving: (on) => metrics.sessionCacheServing.set(on ? 1 : 0),
          },
        )
      : undefined;
  const sessions = new SessionStore(db, timeouts, sessionCache);
  const sends = sendLimit(db, {
    destinationIntervalMs: auth.limits.numberInterval,
    destinationHourly: auth.limits.numberHourly,
    clientHourly: auth.limits.ipHourly,
  });
  // A send claim outlives the exchange request's own time limit (10 min), so it is never taken over mid-send.
  const drafts = new DraftStore(db, 15 * 60_000);
  const refusals = refusalLimit(db, auth.limits.ipHourly);
  return { timeouts, sessions, sessionCache, sendLimit: sends, refusalLimit: refusals, drafts };
}

/** The seal service (B) and the exchange engine (C), as this service calls them. */
function buildServiceClients(config: SharedConfig, auth: AuthConfig, db: AuthDb) {
  // GET /v1/message holds a whole message: no more than the seal service seals (SEAL_MAX_MESSAGE_SIZE).
  const seal = new SealClient({
    baseUrl: auth.sealUrl,
    serviceToken: config.serviceToken,
    maxContentBytes: auth.sealMaxMessageSize,
  });
  const recipients = new RecipientDirectory(db, seal);
  const exchange = new ExchangeClient({ baseUrl: auth.exchangeUrl, serviceToken: config.serviceToken });
  return { seal, recipients, exchange };
}

/** Reply attachments: size limits, forbidden types and the malware scan when clamd is configured. */
function buildAttachments(
  context: AuthContextIn,
  drafts: DraftStore,
  metrics: AuthMetrics,
  clock: Clock,
  logger: Logger,
): DraftAttachments {
  const { config } = context;
  const { attachments: attachmentConfig } = context.settings;
  const { clamd } = attachmentConfig;
  const attachments = new DraftAttachments({
    drafts,
    objects: objectsOf(context),
    settings: {
      maxSize: attachmentConfig.maxSize,
      maxTotalSize: attachmentConfig.replyMaxTotalSize,
      forbidden: new ForbiddenTypes(attachmentConfig.forbiddenTypes),
      scanner: clamd ? new ClamdClient({ host: clamd.host, port: clamd.port, timeoutMs: clamd.timeout }) : undefined,
      requireScan: attachmentConfig.requireScan,
    },
    onScanned: (verdict) => metrics.attachmentsScanned.inc({ verdict }),
    clock,
  });
  // A warning where it matters; on a developer's machine (the embedded default) a plain fact.
  if (!clamd) {
    logger[config.production ? 'warn' : 'info']('CLAMD_HOST is not set: reply attachments are not scanned for malware');
  }
  return attachments;
}

function buildReplySender(
  context: AuthContextIn,
  drafts: DraftStore,
  attachments: DraftAttachments,
  clients: ReturnType<typeof buildServiceClients>,
  clock: Clock,
): ReplySender {
  const auth = context.settings;
  return new ReplySender({
    drafts,
    attachments,
    objects: objectsOf(context),
    recipients: clients.recipients,
    seal: clients.seal,
    exchange: clients.exchange,
    from: { replyFrom: auth.replyFrom, fromRecipient: auth.replyFromRecipient },
    clock,
  });
}

/** Sign-in codes by email: through the outbound relay, or into the outbox folder without one. */
async function buildCodeMailer(config: SharedConfig, auth: AuthConfig, logger: Logger): Promise<CodeMailer> {
  const dkim = await loadDkimSigner(auth.dkim);
  if (dkim && !dkim.aligned(replyIdentityDomain(auth.replyFrom)) && !auth.replyFromRecipient) {
    logger.warn(
      { replyFrom: auth.replyFrom, dkimDomain: dkim.domain },
      'REPLY_FROM is not in DKIM_DOMAIN: replies will not be DKIM-signed and fail DMARC alignment',
    );
  }
  return createCodeMailer({
    outboundSmtpUrl: auth.outboundSmtpUrl,
    outboxDir: join(resolve(config.dataDir), 'outbox'),
    from: auth.mailFrom,
    timeoutMs: auth.sms.timeout,
    dkim,
  });
}

/** The one-time codes and the two ways of sending them (SMS, email). */
function buildSignIn(parts: {
  auth: AuthConfig;
  provider: SmsProvider;
  keys: AuthKeys;
  sessions: SessionStore;
  mailer: CodeMailer;
  metrics: AuthMetrics;
  logger: Logger;
}): Pick<AuthContext, 'codes' | 'methods'> {
  const { auth, provider, keys, sessions, mailer, metrics, logger } = parts;
  const expirationMs = auth.smsCodeExpiration;
  const codes = new PendingCodes(sessions, { codeKey: keys.codeKey, expirationMs, maxAttempts: auth.codeMaxAttempts });
  const methods = createSignInMethods({
    provider,
    smsText: auth.sms.text,
    mailer,
    expiresInMinutes: Math.max(1, Math.round(expirationMs / 60_000)),
    logCodes: provider.kind === 'log',
    metrics,
    defaultLanguage: auth.defaultLanguage,
  });
  if (provider.kind === 'log') {
    logger.info('SMS_PROVIDER=log: sign-in codes are written to the log, not sent (development only)');
  }
  return { codes, methods };
}

/** The numbers GET /v1/config tells the reader page. */
function readerSettings(
  auth: AuthConfig,
  timeouts: ReturnType<typeof buildStores>['timeouts'],
  retentionMs: number,
): AuthContext['settings'] {
  const expirationMs = auth.smsCodeExpiration;
  const { attachments } = auth;
  return {
    codeExpiresInSeconds: Math.floor(expirationMs / 1000),
    maxAttempts: auth.codeMaxAttempts,
    rememberMeMaxAgeSeconds: Math.floor(timeouts.rememberMeMs / 1000),
    subjectBeforeSignIn: auth.subjectBeforeSignIn,
    limits: {
      perNumberIntervalSeconds: Math.ceil(auth.limits.numberInterval / 1000),
      perNumberHourly: auth.limits.numberHourly,
      perIpHourly: auth.limits.ipHourly,
    },
    attachments: { maxFileSize: attachments.maxSize, maxTotalSize: attachments.replyMaxTotalSize, retentionMs },
  };
}

async function startAuthHttp(
  context: AuthContextIn,
  registry: Registry,
  authContext: AuthContext,
  readerPage: Awaited<ReturnType<typeof prepareReaderPage>>,
): Promise<RunningService> {
  return startHttpService({
    name: 'auth',
    title: 'Sealpost auth service (A)',
    description:
      'Sign-in with a one-time code sent by SMS or email, sessions, CSRF, reading and replying. Every POST, PUT and ' +
      'DELETE needs the X-CSRF-Token header with the token from GET /v1/config or GET /v1/message/files.',
    port: context.settings.port,
    portVariable: 'AUTH_PORT',
    context,
    registry,
    browserPage: readerErrorPage,
    headers: strictTransportSecurity(context.settings.publicUrl),
    // The reader page beside the API, not inside it: public and cacheable, no session lookup.
    plugin: async (app: App, options: AuthPluginOptions) => {
      await app.register(readerPageRoutes, { page: readerPage });
      await app.register(authPlugin, options);
    },
    pluginOptions: { auth: authContext },
  });
}

/**
 * HSTS on every answer when the public address is https (RFC 6797): after one visit the browser never tries
 * plain http for this host for a year, so no one on the network can strip the TLS of a later visit. Without
 * includeSubDomains: the auth service owns its host, not the organisation's other names
 * (docs/decisions.md#the-reader-part-a-sessions-and-headers). None over http, where a browser would ignore it anyway.
 */
export function strictTransportSecurity(publicUrl: string): Record<string, string> {
  return new URL(publicUrl).protocol === 'https:' ? { 'strict-transport-security': 'max-age=31536000' } : {};
}

/**
 * The timers that keep the tables small: expired sessions and send counters, drafts past their retention and
 * those of messages that ended.
 */
function startHousekeeping(
  context: AuthContextIn,
  db: AuthDb,
  stores: ReturnType<typeof buildStores>,
  drafts: { retentionMs: number; ended: WatcherOptions['ended'] },
  clock: Clock,
  logger: Logger,
): { stop(): Promise<void> } {
  const auth = context.settings;
  const cleanup = startCleanup({
    sessions: stores.sessions,
    limits: [stores.sendLimit, stores.refusalLimit],
    intervalMs: auth.session.cleanupInterval,
    clock,
    logger,
  });
  const watcher = new ExpiredDraftsWatcher({ db, objects: objectsOf(context), ...drafts, clock, logger }).start(
    auth.expiredAttachmentsWatcherInterval,
  );
  return {
    async stop() {
      await cleanup.stop();
      await watcher.stop();
    },
  };
}
