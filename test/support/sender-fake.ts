/**
 * A stand-in for the auth service's sender API (docs/specification.md, "Auth endpoints for senders" and the
 * message entry of "Seal endpoints for the sender's side"), for the browser tests of the sender's page until
 * the real routes are merged: the page is served by the real route (readerPageRoutes, GET /sent) from a fresh
 * build, and /v1/sender/* and /logout answer here, in the spec's shapes, from memory. It keeps the rules the
 * page must cope with: a session cookie and the CSRF token of X-CSRF-Token, codes by email (read by the test
 * from `codes`), wrong tries counted with `attemptsLeft`, a wait between two codes (429 with Retry-After), the
 * end date within `maxExpiryMs` of sealing (else 400 with B's message), 404 for another sender's message.
 * The counts and times of an entry are derived from its trail, as B derives them.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { buildReader } from '../../scripts/build-reader.ts';
import { readerPageRoutes } from '../../src/auth/reader/routes.ts';
import { errorObject } from '../../src/kernel/errors.ts';
import { createHttpServer } from '../../src/kernel/http.ts';
import { createLogger } from '../../src/kernel/logger.ts';
import { createRegistry } from '../../src/kernel/metrics.ts';

export interface TrailEntry {
  at: string;
  event: string;
  recipient?: string;
  client?: string;
  detail?: Record<string, string>;
}

interface Sealed {
  id: string;
  sender: string;
  subject: string;
  sealedAt: string;
  expiresAt?: string;
  end?: { reason: 'expired' | 'withdrawn'; at: string; note?: string };
  recipients: string[];
  /** How recipients sign in, as B says it (method, and where an SMS recipient's number came from). */
  signIn?: Record<string, { method: 'sms' | 'email'; mobileSource?: 'header' | 'confirmed' | 'directory' }>;
  trail: TrailEntry[];
}

interface Session {
  csrf: string;
  sender?: string;
  pending?: { email: string; code: string; expiresAt: number; triesLeft: number };
  lastCodeAt?: number;
}

export interface SenderFakeOptions {
  codeLength?: number;
  /** Wrong tries before a code is void. */
  maxAttempts?: number;
  /** Seconds between two codes for one session. */
  codeIntervalSeconds?: number;
  /** SEAL_MAX_EXPIRY: an end date later than this after sealing is refused. */
  maxExpiryMs?: number;
}

export interface SenderFake {
  url: string;
  /** The last code sent to each address. */
  codes: Map<string, string>;
  /** Every call to the API, in order: what the page asked for. */
  calls: Array<{ method: string; path: string; body: unknown }>;
  seal(message: {
    sender: string;
    subject: string;
    sealedAt: string;
    expiresAt?: string;
    recipients: string[];
    signIn?: Sealed['signIn'];
  }): string;
  /** Adds an event of a recipient to a message's trail, as A and C report them to B. */
  event(id: string, entry: TrailEntry): void;
  entry(id: string): ReturnType<typeof entryOf>;
  close(): Promise<void>;
}

const COOKIE = 'sealpost_sender_fake';

export async function startSenderFake(options: SenderFakeOptions = {}): Promise<SenderFake> {
  const codeLength = options.codeLength ?? 6;
  const maxAttempts = options.maxAttempts ?? 3;
  const interval = options.codeIntervalSeconds ?? 0;
  const maxExpiryMs = options.maxExpiryMs ?? 30 * 86_400_000;
  const pageDir = await mkdtemp(join(tmpdir(), 'sealpost-sender-page-'));
  await buildReader(pageDir);

  const sessions = new Map<string, Session>();
  const messages = new Map<string, Sealed>();
  const codes = new Map<string, string>();
  const calls: SenderFake['calls'] = [];

  const app = await createHttpServer({
    service: 'auth',
    title: 'sender fake',
    description: 'a stand-in for the sender API',
    logger: createLogger({ level: 'silent' }),
    registry: createRegistry('sender_fake'),
    readiness: {},
  });
  await app.register(readerPageRoutes, { page: { dir: pageDir } });

  const fail = (reply: FastifyReply, status: number, errorCode: string, message: string, extra = {}) =>
    reply.code(status).send(errorObject(status, message, errorCode, undefined, extra));

  /** The session of the cookie, or a new one (set on the answer); its CSRF token always in X-CSRF-Token. */
  const sessionOf = (request: FastifyRequest, reply: FastifyReply): Session => {
    const sid = /(?:^|;\s*)sealpost_sender_fake=([A-Za-z0-9_-]+)/.exec(request.headers.cookie ?? '')?.[1];
    let session = sid ? sessions.get(sid) : undefined;
    if (!session) {
      const id = randomBytes(16).toString('base64url');
      session = { csrf: randomBytes(16).toString('base64url') };
      sessions.set(id, session);
      reply.header('set-cookie', `${COOKIE}=${id}; Path=/; HttpOnly; SameSite=Strict`);
    }
    reply.header('x-csrf-token', session.csrf);
    return session;
  };

  app.addHook('preHandler', async (request, reply) => {
    const path = request.url.split('?')[0]!;
    if (!path.startsWith('/v1/sender/') && path !== '/logout') return;
    calls.push({ method: request.method, path: request.url, body: request.body });
    const session = sessionOf(request, reply);
    if (request.method !== 'GET' && request.headers['x-csrf-token'] !== session.csrf)
      return fail(reply, 403, 'csrf_token_invalid', 'CSRF token missing or wrong');
    if (path.startsWith('/v1/sender/sealed') && !session.sender)
      return fail(reply, 401, 'unauthenticated', 'No proven sender address in this session');
  });

  const session = (request: FastifyRequest, reply: FastifyReply) => sessionOf(request, reply);
  const mine = (request: FastifyRequest, reply: FastifyReply): Sealed | undefined => {
    const { id } = request.params as { id: string };
    const message = messages.get(id);
    return message && message.sender === session(request, reply).sender ? message : undefined;
  };

  app.get('/v1/sender/config', async (request, reply) => {
    const s = session(request, reply);
    return { signedIn: Boolean(s.sender), ...(s.sender ? { sender: s.sender } : {}), codeLength };
  });

  app.post('/v1/sender/code', async (request, reply) => {
    const s = session(request, reply);
    const email = String((request.body as { email?: unknown })?.email ?? '')
      .trim()
      .toLowerCase();
    if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email)) return fail(reply, 400, 'invalid_email', 'email is not an address');
    const waited = s.lastCodeAt === undefined ? Infinity : (Date.now() - s.lastCodeAt) / 1000;
    if (waited < interval) {
      reply.header('retry-after', String(Math.ceil(interval - waited)));
      return fail(reply, 429, 'sms_rate_limit', 'A code was sent a moment ago');
    }
    s.lastCodeAt = Date.now();
    const code = String(Math.floor(Math.random() * 10 ** codeLength)).padStart(codeLength, '0');
    s.pending = { email, code, expiresAt: Date.now() + 600_000, triesLeft: maxAttempts };
    codes.set(email, code);
    return { method: 'email', codeLength, expiresIn: 600 };
  });

  app.post('/v1/sender/verify', async (request, reply) => {
    const s = session(request, reply);
    const code = String((request.body as { code?: unknown })?.code ?? '');
    const pending = s.pending;
    if (!pending || pending.triesLeft <= 0)
      return fail(reply, 400, 'code_attempts_exceeded', 'No code can be tried in this session');
    if (Date.now() > pending.expiresAt) return fail(reply, 400, 'expired_code', 'The code has expired');
    if (code !== pending.code) {
      pending.triesLeft -= 1;
      if (pending.triesLeft <= 0) return fail(reply, 400, 'code_attempts_exceeded', 'Too many wrong codes');
      return fail(reply, 400, 'invalid_code_or_email', 'Wrong code', { attemptsLeft: pending.triesLeft });
    }
    s.pending = undefined;
    s.sender = pending.email;
    return { sender: pending.email };
  });

  app.get('/v1/sender/sealed', async (request, reply) => {
    const sender = session(request, reply).sender;
    const query = request.query as { limit?: string; before?: string; q?: string };
    const limit = Math.min(200, Math.max(1, Number(query.limit ?? 50)));
    const q = query.q?.toLowerCase();
    const list = [...messages.values()]
      .filter((m) => m.sender === sender)
      .filter((m) => !query.before || m.sealedAt < query.before)
      .filter((m) => !q || m.subject.toLowerCase().includes(q) || m.recipients.some((r) => r.includes(q)))
      .sort((a, b) => b.sealedAt.localeCompare(a.sealedAt))
      .slice(0, limit);
    return { sealed: list.map(entryOf) };
  });

  app.get('/v1/sender/sealed/:id', async (request, reply) => {
    const message = mine(request, reply);
    return message ? entryOf(message) : fail(reply, 404, 'not_found', 'No such sealed message');
  });

  app.post('/v1/sender/sealed/:id/withdraw', async (request, reply) => {
    const message = mine(request, reply);
    if (!message) return fail(reply, 404, 'not_found', 'No such sealed message');
    if (message.end) return fail(reply, 410, `message_${message.end.reason}`, 'The message has ended');
    const { reason, recipient } = request.body as { reason?: string; recipient?: string };
    if (!reason) return fail(reply, 400, 'validation_failed', 'body must have required property reason');
    if (recipient && !message.recipients.includes(recipient))
      return fail(reply, 400, 'validation_failed', 'recipient is not a recipient of this message');
    const at = new Date().toISOString();
    message.trail.push({
      at,
      event: 'withdrawn',
      ...(recipient ? { recipient } : {}),
      detail: { scope: recipient ? 'recipient' : 'message', reason },
    });
    if (!recipient) message.end = { reason: 'withdrawn', at, note: reason };
    return entryOf(message);
  });

  app.put('/v1/sender/sealed/:id/expiry', async (request, reply) => {
    const message = mine(request, reply);
    if (!message) return fail(reply, 404, 'not_found', 'No such sealed message');
    if (message.end) return fail(reply, 410, `message_${message.end.reason}`, 'The message has ended');
    const expiresAt = Date.parse(String((request.body as { expiresAt?: unknown })?.expiresAt));
    if (!Number.isFinite(expiresAt) || expiresAt <= Date.now())
      return fail(reply, 400, 'validation_failed', 'expiresAt must be in the future');
    if (expiresAt > Date.parse(message.sealedAt) + maxExpiryMs)
      return fail(
        reply,
        400,
        'validation_failed',
        `expiresAt must be within SEAL_MAX_EXPIRY (${maxExpiryMs / 3_600_000}h) of sealedAt`,
      );
    message.expiresAt = new Date(expiresAt).toISOString();
    message.trail.push({
      at: new Date().toISOString(),
      event: 'end_date_changed',
      detail: { expiresAt: message.expiresAt },
    });
    return entryOf(message);
  });

  app.get('/v1/sender/sealed/:id/trail', async (request, reply) => {
    const message = mine(request, reply);
    if (!message) return fail(reply, 404, 'not_found', 'No such sealed message');
    if ((request.query as { format?: string }).format === 'csv')
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="trail-${message.id}.csv"`)
        .send(trailCsv(message.trail));
    return { id: message.id, trail: message.trail };
  });

  app.get('/logout', async (request, reply) => {
    const s = session(request, reply);
    s.sender = undefined;
    s.pending = undefined;
    return { signedOut: true };
  });

  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;

  return {
    url: `http://127.0.0.1:${port}`,
    codes,
    calls,
    seal(message) {
      const id = randomUUID();
      messages.set(id, { ...message, id, trail: [{ at: message.sealedAt, event: 'sealed' }] });
      return id;
    },
    event(id, entry) {
      messages.get(id)!.trail.push(entry);
    },
    entry(id) {
      return entryOf(messages.get(id)!);
    },
    async close() {
      await app.close();
      await rm(pageDir, { recursive: true, force: true });
    },
  };
}

/** The spec's message entry: the counts and times of each recipient derived from the trail. */
function entryOf(message: Sealed) {
  return {
    id: message.id,
    subject: message.subject,
    sealedAt: message.sealedAt,
    ...(message.expiresAt ? { expiresAt: message.expiresAt } : {}),
    ...(message.end ? { end: message.end } : {}),
    recipients: message.recipients.map((email) => {
      const of = (event: string) => message.trail.filter((e) => e.event === event && e.recipient === email);
      const opened = of('opened');
      return {
        email,
        ...(message.signIn?.[email] ?? {}),
        ...(of('withdrawn')[0] ? { withdrawnAt: of('withdrawn')[0]!.at } : {}),
        ...(of('notified')[0] ? { notifiedAt: of('notified')[0]!.at } : {}),
        ...(opened[0] ? { firstOpenedAt: opened[0].at, lastOpenedAt: opened[opened.length - 1]!.at } : {}),
        failedSignIns: of('sign_in_failed').length,
        downloads: of('attachment_downloaded').length,
        replies: of('reply_sent').length,
      };
    }),
  };
}

/** Columns at,event,recipient,client,detail (detail as JSON), quoted where needed. */
function trailCsv(trail: TrailEntry[]): string {
  const cell = (value: string) => (/[",\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);
  const rows = trail.map((e) =>
    [e.at, e.event, e.recipient ?? '', e.client ?? '', e.detail ? JSON.stringify(e.detail) : ''].map(cell).join(','),
  );
  return `${['at,event,recipient,client,detail', ...rows].join('\n')}\n`;
}
