import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SealedRecord } from '../../src/auth/seal/client.ts';
import { SEAL_HEADER } from '../../src/contracts/seal.ts';

/**
 * A stand-in for the seal service (B) in auth tests: just the service-only reads the auth service uses,
 * implementing B's contract (GET /v1/sealed/{id}, GET /v1/sealed/{id}/content?recipient= with its
 * X-Sealpost-Seal header, GET /v1/sealed/{id}/recipients/{email}, GET /v1/recipients/{email}/sealed and
 * POST /v1/sealed/ended, with the service token). Messages are registered directly, and ended (expired,
 * withdrawn for everyone or for one recipient) as B's end does it: 410 message_expired / message_withdrawn
 * with endedAt and contact (docs/specification.md#end-dates). The sender's side
 * (docs/specification.md#the-senders-side): POST /v1/sealed/{id}/events records `events` (201 `{first}`), and the
 * sender API under /v1/senders/{sender}/sealed answers from the records and those events, 404 for another sender's
 * message. An end-to-end test uses the real seal service.
 */
/** The record as B answers it: B's contract (src/contracts/seal.ts), which the auth service's client checks. */
export type StandInRecord = SealedRecord;
export type SealedRecipientInput = SealedRecord['recipients'][number];

export interface SealStandIn {
  url: string;
  /** Registers a sealed message; returns its record (id generated unless given). */
  register(message: {
    id?: string;
    raw: string | Buffer;
    recipients: SealedRecipientInput[];
    sender?: string;
    subject?: string;
    /** The end date: from then on it is expired, at once, as B enforces it. */
    expiresAt?: Date;
  }): StandInRecord;
  /** From now on the content of this message fails its hash check (B answers 502, no content). */
  breakSeal(id: string): void;
  /** From now on this message is gone (B answers 404, as after its retention). */
  forget(id: string): void;
  /** Ends the message for everyone, as B does once it expired or was withdrawn: every read answers 410. */
  end(id: string, reason: 'expired' | 'withdrawn', at?: Date): void;
  /** Withdraws the message for one recipient alone: their reads answer 410 message_withdrawn. */
  withdrawFor(id: string, email: string, at?: Date): void;
  /** Events reported to the trail, in the order they came. */
  events: Array<{ id: string; event: string; recipient?: string; client?: string; detail?: Record<string, string> }>;
  /** Numbers recipients confirmed for later messages (PUT /v1/recipients/{email}/mobile), in the order they came. */
  confirmedMobiles: Array<{ email: string; mobile: string; messageId?: string }>;
  /** Requests seen (but the events), as `GET /v1/sealed/...` with the Authorization header they carried. */
  requests: Array<{ method: string; url: string; authorization: string | undefined }>;
  close(): Promise<void>;
}

export async function startSealStandIn(options: {
  serviceToken: string;
  /**
   * false: answer as a seal service from before the X-Sealpost-Seal header, which also named no CID in
   * its seal_broken error object, so that the auth service asks GET /v1/sealed/{id} for both.
   */
  sealFacts?: boolean;
}): Promise<SealStandIn> {
  const sealFacts = options.sealFacts ?? true;
  const messages = new Map<string, { record: StandInRecord; raw: Buffer; broken: boolean }>();
  /** The sealedAt of the last message registered (epoch ms). */
  let lastSealed = 0;
  /** B's 410 for `entry` read by `recipient` (any reader when undefined), or undefined while it may be read. */
  const endOf = (record: StandInRecord, recipient: string | undefined) => {
    const ended = endedNow(record);
    if (ended) {
      const errorCode = ended.reason === 'expired' ? 'message_expired' : 'message_withdrawn';
      return { errorCode, endedAt: ended.at, contact: record.sender };
    }
    const key = recipient?.trim().toLowerCase();
    const withdrawnAt = record.recipients.find((r) => r.email.toLowerCase() === key)?.withdrawnAt;
    return withdrawnAt ? { errorCode: 'message_withdrawn', endedAt: withdrawnAt, contact: record.sender } : undefined;
  };
  const requests: SealStandIn['requests'] = [];
  const events: SealStandIn['events'] = [];
  const confirmedMobiles: SealStandIn['confirmedMobiles'] = [];
  const sendJson = (response: ServerResponse, status: number, body: unknown) =>
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  /** A message as its sender sees it, the counts and times from the trail. */
  const senderEntry = (record: StandInRecord) => {
    const trail = events.filter((entry) => entry.id === record.id);
    const end = endedNow(record);
    return {
      id: record.id,
      subject: record.subject,
      sealedAt: record.sealedAt,
      ...(record.expiresAt ? { expiresAt: record.expiresAt } : {}),
      ...(end ? { end } : {}),
      recipients: record.recipients.map((recipient) => {
        const own = trail.filter((entry) => entry.recipient?.toLowerCase() === recipient.email.toLowerCase());
        const count = (event: string) => own.filter((entry) => entry.event === event).length;
        return {
          email: recipient.email,
          ...(recipient.withdrawnAt ? { withdrawnAt: recipient.withdrawnAt } : {}),
          failedSignIns: count('sign_in_failed'),
          downloads: count('attachment_downloaded'),
          replies: count('reply_sent'),
        };
      }),
    };
  };
  const senderApi = (request: IncomingMessage, response: ServerResponse, url: URL, body: string): boolean => {
    const route = /^\/v1\/senders\/([^/]+)\/sealed(?:\/([^/]+)(\/withdraw|\/expiry|\/trail)?)?$/.exec(url.pathname);
    if (!route) return false;
    const sender = decodeURIComponent(route[1]!).toLowerCase();
    const own = [...messages.values()].filter(({ record }) => record.sender.toLowerCase() === sender);
    if (!route[2]) {
      sendJson(response, 200, { sealed: own.map(({ record }) => senderEntry(record)).reverse() });
      return true;
    }
    const entry = own.find(({ record }) => record.id === decodeURIComponent(route[2]!));
    // Another sender's message answers as one that does not exist.
    if (!entry) {
      sendError(response, 404, 'No sealed message of this sender with this id', 'not_found');
      return true;
    }
    const { record } = entry;
    const action = `${request.method} ${route[3] ?? ''}`;
    if (action === 'POST /withdraw') {
      const { recipient } = JSON.parse(body) as { reason: string; recipient?: string };
      const at = new Date().toISOString();
      const target = record.recipients.find((r) => r.email.toLowerCase() === recipient?.toLowerCase());
      if (target) target.withdrawnAt = at;
      else record.end = { reason: 'withdrawn', at };
      sendJson(response, 200, senderEntry(record));
    } else if (action === 'PUT /expiry') {
      const { expiresAt } = JSON.parse(body) as { expiresAt: string };
      if (endedNow(record)) sendError(response, 410, 'This sealed message ended', 'message_expired');
      else if (Date.parse(expiresAt) <= Date.now()) sendError(response, 400, 'expiresAt must be after now');
      else {
        record.expiresAt = new Date(expiresAt).toISOString();
        sendJson(response, 200, senderEntry(record));
      }
    } else if (action === 'GET /trail') {
      const trail = events
        .filter((event) => event.id === record.id)
        .map(({ id: _id, ...event }) => ({ at: record.sealedAt, ...event }));
      if (request.headers.accept === 'text/csv') {
        const rows = trail.map((e) => [
          e.at,
          e.event,
          e.recipient ?? '',
          e.client ?? '',
          JSON.stringify(e.detail ?? {}),
        ]);
        const csv = [['at', 'event', 'recipient', 'client', 'detail'], ...rows]
          .map((row) => row.join(','))
          .join('\r\n');
        response.writeHead(200, { 'content-type': 'text/csv' }).end(`${csv}\r\n`);
      } else sendJson(response, 200, { id: record.id, trail });
    } else if (action === 'GET ') sendJson(response, 200, senderEntry(record));
    else sendError(response, 404, 'No such route');
    return true;
  };

  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    // The trail's events are kept in `events`, so that `requests` shows the reads a request made, as before them.
    if (!/^\/v1\/sealed\/[^/]+\/events$/.test(request.url ?? ''))
      requests.push({
        method: request.method ?? '',
        url: request.url ?? '',
        authorization: request.headers.authorization,
      });
    if (request.headers.authorization !== `Bearer ${options.serviceToken}`)
      return sendError(response, 401, 'This endpoint needs the service token');
    const url = new URL(request.url ?? '/', 'http://stand-in');
    const eventRoute = /^\/v1\/sealed\/([^/]+)\/events$/.exec(url.pathname);
    if (url.pathname.startsWith('/v1/senders/') || (request.method === 'POST' && eventRoute)) {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        if (!eventRoute) {
          if (!senderApi(request, response, url, body)) sendError(response, 404, 'No such route');
          return;
        }
        const id = decodeURIComponent(eventRoute[1]!);
        if (!messages.has(id)) return sendError(response, 404, 'No sealed message with this id', 'not_found');
        const reported = JSON.parse(body) as Omit<SealStandIn['events'][number], 'id'>;
        const first = !events.some(
          (e) => e.id === id && e.event === reported.event && e.recipient === reported.recipient,
        );
        events.push({ id, ...reported });
        sendJson(response, 201, { first });
      });
      return;
    }
    const confirmRoute = /^\/v1\/recipients\/([^/]+)\/mobile$/.exec(url.pathname);
    if (request.method === 'PUT' && confirmRoute) {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { mobile: string; messageId?: string };
        const email = decodeURIComponent(confirmRoute[1]!);
        confirmedMobiles.push({ email, ...body });
        sendJson(response, 200, { email, mobile: body.mobile, confirmedAt: new Date().toISOString() });
      });
      return;
    }
    if (request.method === 'POST' && url.pathname === '/v1/sealed/ended') {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const { ids } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { ids: string[] };
        if (!Array.isArray(ids) || ids.length > 500) return sendError(response, 400, 'ids: at most 500');
        const ended = ids.flatMap((id) => {
          const entry = messages.get(id);
          const end = entry && endedNow(entry.record);
          return end ? [{ id, end }] : [];
        });
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ended }));
      });
      return;
    }
    const recipientRoute = /^\/v1\/sealed\/([^/]+)\/recipients\/([^/]+)$/.exec(url.pathname);
    if (request.method === 'GET' && recipientRoute) {
      const entry = messages.get(decodeURIComponent(recipientRoute[1]!));
      const email = decodeURIComponent(recipientRoute[2]!);
      const recipient = entry?.record.recipients.find((r) => r.email.toLowerCase() === email.trim().toLowerCase());
      if (!entry || !recipient) return sendError(response, 404, 'Not a recipient of this sealed message', 'not_found');
      const end = endOf(entry.record, email);
      if (end) return sendError(response, 410, 'This sealed message ended', end.errorCode, end);
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(recipient));
      return;
    }
    const lookup = /^\/v1\/recipients\/([^/?]+)\/sealed(?:\?.*)?$/.exec(request.url ?? '');
    if (request.method === 'GET' && lookup) {
      // B's GET /v1/recipients/{email}/sealed: newest first, each entry with that recipient's row.
      const key = decodeURIComponent(lookup[1]!).trim().toLowerCase();
      const sealed = [...messages.values()]
        .map(({ record }) => ({ record, recipient: record.recipients.find((r) => r.email.toLowerCase() === key) }))
        .filter((entry) => entry.recipient !== undefined)
        .reverse()
        .map(({ record, recipient }) => ({
          id: record.id,
          sender: record.sender,
          subject: record.subject,
          sealedAt: record.sealedAt,
          recipient: recipient!,
          ...(record.expiresAt ? { expiresAt: record.expiresAt } : {}),
          ...(endedNow(record) ? { end: endedNow(record) } : {}),
        }))
        // B's order and paging: the newest first, then by id; `before` and `beforeId` go on after a page's last.
        .sort((a, b) => (a.sealedAt !== b.sealedAt ? (a.sealedAt < b.sealedAt ? 1 : -1) : a.id < b.id ? -1 : 1));
      const before = url.searchParams.get('before');
      const beforeId = url.searchParams.get('beforeId') ?? '';
      const after = before
        ? sealed.filter((e) => e.sealedAt < before || (beforeId !== '' && e.sealedAt === before && e.id > beforeId))
        : sealed;
      const page = after.slice(0, Number(url.searchParams.get('limit') ?? 50));
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ sealed: page }));
      return;
    }
    const match = /^\/v1\/sealed\/([^/?]+)(\/content)?$/.exec(url.pathname);
    if (request.method !== 'GET' || !match) return sendError(response, 404, 'No such route');
    const entry = messages.get(decodeURIComponent(match[1]!));
    if (!entry) return sendError(response, 404, 'No sealed message with this id', 'not_found');
    if (!match[2]) {
      const end = endedNow(entry.record);
      const record = end ? { ...entry.record, end } : entry.record;
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(record));
      return;
    }
    const end = endOf(entry.record, url.searchParams.get('recipient') ?? undefined);
    if (end) return sendError(response, 410, 'This sealed message ended: its content is gone', end.errorCode, end);
    if (entry.broken) {
      const cid = sealFacts ? { cid: entry.record.cid } : {};
      return sendError(response, 502, 'The content does not match the seal (SHA-256 differs)', 'seal_broken', cid);
    }
    const { id, cid, sha256, sealedAt, pins } = entry.record;
    const facts = {
      id,
      cid,
      sha256,
      sealedAt,
      pins: pins.map(({ cluster, status, error }) => ({ cluster, status, error })),
    };
    response
      .writeHead(200, {
        'content-type': 'message/rfc822',
        'content-length': entry.raw.length,
        ...(sealFacts ? { [SEAL_HEADER]: Buffer.from(JSON.stringify(facts)).toString('base64url') } : {}),
      })
      .end(entry.raw);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    events,
    confirmedMobiles,
    register(message) {
      const raw = Buffer.isBuffer(message.raw) ? message.raw : Buffer.from(message.raw.replace(/\r?\n/g, '\r\n'));
      // Each later than the one before, as messages sealed one after the other are: "newest first" has one answer.
      lastSealed = Math.max(Date.now(), lastSealed + 1);
      const now = new Date(lastSealed).toISOString();
      const record: StandInRecord = {
        id: message.id ?? randomUUID(),
        cid: `bafy${randomBytes(20).toString('hex')}`,
        sha256: createHash('sha256').update(raw).digest('hex'),
        size: raw.length,
        sender: message.sender ?? 'sender@example.org',
        subject: message.subject ?? 'Sealed',
        sealedAt: now,
        recipients: message.recipients.map((recipient) => ({ ...recipient })),
        ...(message.expiresAt ? { expiresAt: message.expiresAt.toISOString() } : {}),
        pins: [
          { cluster: '127.0.0.1:9094', status: 'pinned', attempts: 1, updatedAt: now },
          { cluster: '127.0.0.1:9194', status: 'pinned', attempts: 1, updatedAt: now },
        ],
      };
      messages.set(record.id, { record, raw, broken: false });
      return record;
    },
    breakSeal(id) {
      const entry = messages.get(id);
      if (entry) entry.broken = true;
    },
    forget(id) {
      messages.delete(id);
    },
    end(id, reason, at = new Date()) {
      const entry = messages.get(id);
      if (entry) entry.record.end = { reason, at: at.toISOString() };
    },
    withdrawFor(id, email, at = new Date()) {
      const recipient = messages.get(id)?.record.recipients.find((r) => r.email.toLowerCase() === email.toLowerCase());
      if (recipient) recipient.withdrawnAt = at.toISOString();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The message's end, an end date that has passed included (B enforces expiry the moment it passes). */
function endedNow(record: StandInRecord): StandInRecord['end'] {
  if (record.end) return record.end;
  if (record.expiresAt && Date.parse(record.expiresAt) <= Date.now())
    return { reason: 'expired', at: record.expiresAt };
  return undefined;
}

function sendError(
  response: ServerResponse,
  status: number,
  message: string,
  errorCode?: string,
  details: { cid?: string; endedAt?: string; contact?: string } = {},
) {
  const { cid, endedAt, contact } = details;
  const extra = { ...(cid ? { cid } : {}), ...(endedAt ? { endedAt, contact } : {}) };
  const body = { id: randomUUID(), kind: status, ...(errorCode ? { errorCode } : {}), message, ...extra };
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
