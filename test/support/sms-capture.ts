import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One SMS as a provider received it. */
export interface CapturedSms {
  format: 'http' | 'twilio';
  to: string;
  from: string;
  text: string;
  /** Decoded Basic auth of the request. */
  user: string | undefined;
  password: string | undefined;
  path: string;
  contentType: string | undefined;
  /** The Twilio account SID from the path. */
  accountSid?: string;
}

/**
 * A local SMS provider for tests. It takes both formats the auth service speaks: the generic JSON POST
 * `{to, from, text}` (any path but Twilio's) and Twilio's form post to
 * /2010-04-01/Accounts/{sid}/Messages.json. It can be told to fail with a status or to hang.
 */
export interface SmsCapture {
  /** Base URL: SMS_PROVIDER_URL for `http` (posts to `${url}/sms`) or for `twilio`. */
  url: string;
  messages: CapturedSms[];
  /** Answer every request with this status (undefined: succeed again). Nothing is recorded meanwhile. */
  failWith(status: number | undefined): void;
  /** Accept requests but never answer them (until told otherwise or closed). */
  hang(on: boolean): void;
  /** The code in the latest SMS to `to` (digits of the text). */
  lastCodeTo(to: string): string;
  close(): Promise<void>;
}

export async function startSmsCapture(): Promise<SmsCapture> {
  const messages: CapturedSms[] = [];
  let failure: number | undefined;
  let hanging = false;
  const held: ServerResponse[] = [];

  const server = createServer(async (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    if (hanging) {
      held.push(response);
      return;
    }
    if (failure !== undefined) {
      response
        .writeHead(failure, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: 'provider says no' }));
      return;
    }
    const body = Buffer.concat(chunks).toString('utf8');
    const [user, password] = basic(request.headers.authorization);
    const path = request.url ?? '';
    const twilio = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/.exec(path);
    if (request.method === 'POST' && twilio) {
      const form = new URLSearchParams(body);
      messages.push({
        format: 'twilio',
        to: form.get('To') ?? '',
        from: form.get('From') ?? form.get('MessagingServiceSid') ?? '',
        text: form.get('Body') ?? '',
        user,
        password,
        path,
        contentType: request.headers['content-type'],
        accountSid: decodeURIComponent(twilio[1]!),
      });
      response
        .writeHead(201, { 'content-type': 'application/json' })
        .end(JSON.stringify({ sid: `SM${messages.length}`, status: 'queued' }));
      return;
    }
    if (request.method === 'POST') {
      let parsed: { to?: string; from?: string; text?: string };
      try {
        parsed = JSON.parse(body) as typeof parsed;
      } catch {
        response.writeHead(400).end('not JSON');
        return;
      }
      messages.push({
        format: 'http',
        to: parsed.to ?? '',
        from: parsed.from ?? '',
        text: parsed.text ?? '',
        user,
        password,
        path,
        contentType: request.headers['content-type'],
      });
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"accepted":true}');
      return;
    }
    response.writeHead(405).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const release = () => {
    for (const response of held.splice(0)) response.destroy();
  };

  return {
    url: `http://127.0.0.1:${port}`,
    messages,
    failWith(status) {
      failure = status;
    },
    hang(on) {
      hanging = on;
      if (!on) release();
    },
    lastCodeTo(to) {
      const sms = messages.filter((m) => m.to === to).at(-1);
      const code = sms && /\b(\d{6})\b/.exec(sms.text)?.[1];
      if (!code) throw new Error(`no SMS with a code to ${to} (got ${messages.length} SMS)`);
      return code;
    },
    close: () =>
      new Promise<void>((resolve) => {
        release();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function basic(header: string | undefined): [string | undefined, string | undefined] {
  const match = header ? /^Basic\s+(\S+)$/i.exec(header) : null;
  if (!match) return [undefined, undefined];
  const text = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  return colon < 0 ? [text, undefined] : [text.slice(0, colon), text.slice(colon + 1)];
}
