import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';

interface SealCall {
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/**
 * A stand-in for the seal service's POST /v1/seal, to the contract the exchange codes against: records
 * each call, answers with the status `respond` picks (201 the first time an envelope is sealed, 200
 * after, as the real service does), with one reader link per envelope recipient and the end date
 * `expiresAt` names. POST /v1/sealed/{id}/events (the trail's `notified`) is recorded in `events` and
 * answered 201, or with `eventStatus`.
 */
export async function startSealStandIn() {
  const calls: SealCall[] = [];
  const sealed = new Map<string, string>();
  const standIn = {
    calls,
    respond: (_envelopeId: string, _attempt: number): number => 201,
    /** The end date the answer carries (`expiresAt`), as the seal service gives one; undefined: none. */
    expiresAt: undefined as string | undefined,
    url: '',
    server: undefined as Server | undefined,
    events: [] as Array<{ sealedId: string; authorization: string | undefined; body: unknown }>,
    eventStatus: 201,
  };
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const event = /^\/v1\/sealed\/([^/]+)\/events$/.exec(request.url ?? '');
      if (request.method === 'POST' && event) {
        const body: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        standIn.events.push({ sealedId: event[1]!, authorization: request.headers.authorization, body });
        response.writeHead(standIn.eventStatus, { 'content-type': 'application/json' });
        return response.end(JSON.stringify({ first: true }));
      }
      calls.push({ headers: request.headers, body: Buffer.concat(chunks) });
      const envelopeId = String(request.headers['x-sealpost-envelope-id']);
      const attempt = calls.filter((c) => c.headers['x-sealpost-envelope-id'] === envelopeId).length;
      const status = standIn.respond(envelopeId, attempt);
      response.setHeader('content-type', 'application/json');
      if (status >= 400) {
        response.statusCode = status;
        return response.end(
          JSON.stringify({
            id: randomUUID(),
            kind: status,
            message: status === 400 ? 'not a MIME message' : 'IPFS cluster unavailable',
          }),
        );
      }
      const id = sealed.get(envelopeId) ?? randomUUID();
      response.statusCode = sealed.has(envelopeId) ? 200 : 201;
      sealed.set(envelopeId, id);
      const recipients = String(request.headers['x-sealpost-envelope-recipients'])
        .split(',')
        .map((email) => email.trim())
        .map((email) => ({
          email,
          method: email.startsWith('sms-') ? 'sms' : 'email',
          link: `http://auth.sealpost.test/m/${id}`,
        }));
      response.end(
        JSON.stringify({
          id,
          cid: 'QmStandIn',
          sha256: 'ab'.repeat(32),
          sender: 'Alice <alice@sender.example>',
          subject: 'Quarterly figures',
          recipients,
          pins: [{ cluster: 'primary', status: 'pinned' }],
          ...(standIn.expiresAt !== undefined ? { expiresAt: standIn.expiresAt } : {}),
        }),
      );
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  standIn.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  standIn.server = server;
  return standIn;
}
