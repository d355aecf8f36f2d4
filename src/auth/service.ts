import { join, resolve } from 'node:path';
import type { Kysely } from 'kysely';
import { durationToMs } from '../kernel/duration.ts';
import { createRegistry } from '../kernel/metrics.ts';
import { startHttpService, type ServiceDefinition } from '../kernel/service.ts';
import { PendingCodes } from './codes/pending-codes.ts';
import { CodeSendLimiter } from './codes/rate-limit.ts';
import { ForbiddenTypes } from './attachments/file-type.ts';
import { DraftAttachments } from './attachments/upload.ts';
import { ClamdClient } from './clamd/client.ts';
import type { AuthContext } from './context.ts';
import { DraftStore } from './drafts/store.ts';
import { ExpiredDraftsWatcher } from './drafts/watcher.ts';
import { ExchangeClient } from './exchange/client.ts';
import { createCodeMailer } from './mail/code-mail.ts';
import { emailMethod } from './methods/email.ts';
import { smsMethod } from './methods/sms.ts';
import { createAuthMetrics } from './metrics.ts';
import { migrations } from './migrations/index.ts';
import type { App } from '../kernel/http.ts';
import { authPlugin, type AuthPluginOptions } from './plugin.ts';
import { prepareReaderPage } from './reader-assets.ts';
import { readerErrorPage, readerPageRoutes } from './routes/reader.ts';
import { ReplySender } from './reply/send.ts';
import { replyIdentityDomain } from './reply/identity.ts';
import { loadDkimSigner } from '../kernel/dkim.ts';
import { SealClient } from './seal/client.ts';
import { RecipientDirectory } from './seal/recipients.ts';
import { MessageAccess } from './sessions/access.ts';
import { MobileChangeNotices } from './mobile-notices.ts';
import { deriveKeys, resolveAuthSecret } from './secret.ts';
import { startCleanup } from './sessions/cleanup.ts';
import { sessionCookie } from './sessions/cookie.ts';
import { SessionStore } from './sessions/store.ts';
import { createSmsProvider } from './sms/index.ts';
import type { AuthTables } from './tables.ts';

/** Component A: recipients sign in with a one-time code, read their sealed message and reply. */
export const authService: ServiceDefinition = {
  name: 'auth',
  migrations: { schema: 'auth', migrations },
  async start(context) {
    const { config } = context;
    const auth = config.auth;
    const logger = context.logger.child({ service: 'auth' });
    // Both refuse to start in production without a real provider and an explicit secret.
    const provider = createSmsProvider(config, logger);
    const secret = await resolveAuthSecret(config);
    if (secret.source === 'generated') logger.info({ file: join(resolve(config.dataDir), 'auth-secret.key') }, 'generated AUTH_SECRET into the data folder');

    const db = context.database.db.withSchema('auth') as Kysely<AuthTables>;
    const registry = createRegistry('auth');
    const metrics = createAuthMetrics(registry);
    const expirationMs = durationToMs(auth.smsCodeExpiration);
    const timeouts = {
      idleMs: durationToMs(auth.session.idleTimeout),
      absoluteMs: durationToMs(auth.session.absoluteTimeout),
      rememberMeMs: durationToMs(auth.session.rememberMeMaxAge),
    };
    const keys = deriveKeys(secret.secret);
    const sessions = new SessionStore(db, timeouts);
    const limiter = new CodeSendLimiter(db, {
      destinationIntervalMs: durationToMs(auth.limits.numberInterval),
      destinationHourly: auth.limits.numberHourly,
      clientHourly: auth.limits.ipHourly,
    });
    // GET /v1/message holds a whole message: no more than the seal service seals (SEAL_MAX_MESSAGE_SIZE).
    const seal = new SealClient({ baseUrl: auth.sealUrl, serviceToken: config.serviceToken, maxContentBytes: config.seal.maxMessageSize });
    const recipients = new RecipientDirectory(db, seal);
    // A send claim outlives the exchange request's own time limit (10 min), so it is never taken over mid-send.
    const drafts = new DraftStore(db, 15 * 60_000);
    const { attachments: attachmentConfig } = auth;
    const attachments = new DraftAttachments({
      drafts,
      objects: context.objects,
      settings: {
        maxSize: attachmentConfig.maxSize,
        maxTotalSize: attachmentConfig.replyMaxTotalSize,
        forbidden: new ForbiddenTypes(attachmentConfig.forbiddenTypes),
        scanner: attachmentConfig.clamd
          ? new ClamdClient({ host: attachmentConfig.clamd.host, port: attachmentConfig.clamd.port, timeoutMs: durationToMs(attachmentConfig.clamd.timeout) })
          : undefined,
        requireScan: attachmentConfig.requireScan,
      },
      onScanned: (verdict) => metrics.attachmentsScanned.inc({ verdict }),
    });
    // A warning where it matters; on a developer's machine (the embedded default) a plain fact.
    if (!attachmentConfig.clamd) logger[config.production ? 'warn' : 'info']('CLAMD_HOST is not set: reply attachments are not scanned for malware');
    const replies = new ReplySender({
      drafts,
      attachments,
      objects: context.objects,
      recipients,
      seal,
      exchange: new ExchangeClient({ baseUrl: auth.exchangeUrl, serviceToken: config.serviceToken }),
      from: { replyFrom: auth.replyFrom, fromRecipient: auth.replyFromRecipient },
    });
    const retentionMs = durationToMs(auth.attachmentsRetentionPeriod);
    const dkim = await loadDkimSigner(auth.dkim);
    if (dkim && !dkim.aligned(replyIdentityDomain(auth.replyFrom)) && !auth.replyFromRecipient) {
      logger.warn({ replyFrom: auth.replyFrom, dkimDomain: dkim.domain }, 'REPLY_FROM is not in DKIM_DOMAIN: replies will not be DKIM-signed and fail DMARC alignment');
    }
    const mailer = createCodeMailer({
      outboundSmtpUrl: auth.outboundSmtpUrl,
      outboxDir: join(resolve(config.dataDir), 'outbox'),
      from: auth.mailFrom,
      timeoutMs: durationToMs(auth.sms.timeout),
      dkim,
    });
    const authContext: AuthContext = {
      metrics,
      sessions,
      codes: new PendingCodes(sessions, { codeKey: keys.codeKey, expirationMs, maxAttempts: auth.codeMaxAttempts }),
      limiter,
      seal,
      recipients,
      access: new MessageAccess(db, recipients, seal),
      mobileNotices: new MobileChangeNotices({ provider, mailer, defaultLanguage: auth.defaultLanguage }),
      methods: {
        sms: smsMethod({ provider, text: auth.sms.text, metrics }),
        email: emailMethod({ mailer, expiresInMinutes: Math.max(1, Math.round(expirationMs / 60_000)), logCodes: provider.kind === 'log', metrics, defaultLanguage: auth.defaultLanguage }),
      },
      cookie: sessionCookie(auth.publicUrl),
      keys,
      trustProxyHops: auth.trustProxyHops,
      drafts,
      attachments,
      replies,
      settings: {
        codeExpiresInSeconds: Math.floor(expirationMs / 1000),
        maxAttempts: auth.codeMaxAttempts,
        rememberMeMaxAgeSeconds: Math.floor(timeouts.rememberMeMs / 1000),
        limits: {
          perNumberIntervalSeconds: Math.ceil(durationToMs(auth.limits.numberInterval) / 1000),
          perNumberHourly: auth.limits.numberHourly,
          perIpHourly: auth.limits.ipHourly,
        },
        attachments: { maxFileSize: attachmentConfig.maxSize, maxTotalSize: attachmentConfig.replyMaxTotalSize, retentionMs },
      },
    };
    if (provider.kind === 'log') logger.info('SMS_PROVIDER=log: sign-in codes are written to the log, not sent (development only)');
    if (config.production && !authContext.cookie.secure) {
      logger.warn({ publicUrl: auth.publicUrl }, 'AUTH_PUBLIC_URL is plain http: session cookies are sent without Secure (meant for local development only)');
    }

    const readerPage = await prepareReaderPage(logger);
    const http = await startHttpService({
      name: 'auth',
      title: 'Sealpost auth service (A)',
      description:
        'Sign-in with a one-time code sent by SMS or email, sessions, CSRF, reading and replying. Every POST, PUT and ' +
        'DELETE needs the X-CSRF-Token header with the token from GET /v1/config or GET /v1/message/files.',
      port: auth.port,
      context,
      registry,
      browserPage: readerErrorPage,
      // The reader page beside the API, not inside it: public and cacheable, no session lookup.
      plugin: async (app: App, options: AuthPluginOptions) => {
        await app.register(readerPageRoutes, { page: readerPage });
        await app.register(authPlugin, options);
      },
      pluginOptions: { auth: authContext },
    }).catch(async (error: unknown) => {
      await mailer.close();
      throw error;
    });
    const cleanup = startCleanup({ sessions, limiter, intervalMs: durationToMs(auth.session.cleanupInterval), logger });
    const watcher = new ExpiredDraftsWatcher({ db, objects: context.objects, retentionMs, logger }).start(durationToMs(auth.expiredAttachmentsWatcherInterval));
    return {
      ...http,
      async stop() {
        await http.stop();
        await cleanup.stop();
        await watcher.stop();
        await mailer.close();
      },
    };
  },
};
