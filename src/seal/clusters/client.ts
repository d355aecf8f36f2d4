import { randomBytes } from 'node:crypto';
import http, { type ClientRequest, type IncomingMessage } from 'node:http';
import https from 'node:https';
import { createSecureContext } from 'node:tls';
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { clusterName, expireInToSend, ipfsApiOf, timeoutMs, type ClusterSettings } from './config.ts';

/**
 * A client of one IPFS cluster peer, speaking the cluster's REST API (ipfs-cluster/ipfs-cluster
 * api/rest/restapi.go, api/add.go, api/types.go) and, for reading, the IPFS HTTP API that the peer
 * proxies to Kubo (api/ipfsproxy; `POST /api/v0/cat`).
 *
 * Node's http module rather than fetch: the cluster reports errors of a streamed answer in the
 * `X-Stream-Error` HTTP trailer, which fetch cannot read.
 *
 * Every call carries the cluster's `timeout` as a deadline for the whole exchange, request body and
 * answer included, as the Go client's http.Client.Timeout does: a cluster that accepts the connection
 * and then hangs fails the call instead of holding the message.
 */

/** How much of an upload is gathered before it is written (see ClusterClient.add). */
const UPLOAD_BATCH_BYTES = 256 * 1024;

export type ClusterErrorKind = 'unreachable' | 'timeout' | 'tls' | 'http' | 'protocol';

export class ClusterError extends Error {
  constructor(
    readonly cluster: string,
    readonly kind: ClusterErrorKind,
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(`IPFS cluster ${cluster}: ${message}`, options);
    this.name = 'ClusterError';
  }
}

/** An error of the content being uploaded (e.g. the size limit), not of the cluster: passed on as is. */
class SourceFailure extends Error {
  constructor(readonly original: unknown) {
    super('upload source failed');
  }
}

export interface ClusterClientOptions {
  /** Port of the IPFS proxy on the cluster's host (IPFS_PROXY_PORT), for a cluster without its own `ipfsApi`. */
  proxyPort: number;
  /** Certificate authorities trusted for HTTPS (PEM), in addition to Node's public roots. */
  ca?: string[];
}

export interface AddResult {
  /** The root the cluster pins: the file, or the wrapping directory with addParams.wrap. */
  cid: string;
  /** Whether the file sits in a wrapping directory (read it as /ipfs/<cid>/<fileName>). */
  wrapped: boolean;
  /** Size of the DAG as the cluster reports it. */
  size: number | undefined;
}

/** api.AddedOutput as JSON: name, cid (a string), size, bytes, allocations. */
interface AddedOutput {
  name?: string;
  cid?: string | null | { '/': string };
  size?: number;
  bytes?: number;
}

const MAX_ANSWER_BYTES = 4 * 1024 * 1024;
const PROXY_CREDENTIALS_HINT =
  "a secure cluster's credentials are not sent to its plain-HTTP IPFS proxy: " +
  'let the IPFS node behind the proxy serve cat without them, on a private network';
const TLS_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_GET_ISSUER_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'EPROTO',
  'ERR_SSL_WRONG_VERSION_NUMBER',
]);

export class ClusterClient {
  readonly name: string;
  private readonly timeout: number;
  private readonly authorization: string | undefined;
  /**
   * Keep-alive connections to the REST API, and for HTTPS one secure context built once. Passing `ca`
   * with each request made Node fold the whole CA list (the public roots and ours, ~200 KB of PEM) into
   * the agent's pool name on every call and parse it again for every new TLS connection: ~8 ms of CPU
   * per seal at 8 seals at a time (bench/seal.ts).
   */
  private readonly restAgent: http.Agent;
  /** Where reads go: the cluster's own IPFS API address, or its host on IPFS_PROXY_PORT. */
  readonly ipfsApi: URL;
  /**
   * The IPFS API's address as an operator finds and fixes it: the address, and the setting it came
   * from, for every failure of a read (a log naming the REST API's port sent operators to the wrong one).
   */
  readonly ipfsApiSource: string;

  constructor(
    readonly settings: ClusterSettings,
    private readonly options: ClusterClientOptions,
  ) {
    this.name = clusterName(settings);
    this.timeout = timeoutMs(settings);
    this.ipfsApi = ipfsApiOf(settings, options.proxyPort);
    this.ipfsApiSource = `IPFS API ${this.ipfsApi.origin} (${
      settings.ipfsApi
        ? "the cluster's ipfsApi; IPFS_PROXY_URL for the cluster of the environment"
        : `IPFS_PROXY_PORT=${options.proxyPort} on the cluster's host; IPFS_PROXY_URL or ipfsApi to point elsewhere`
    })`;
    // Idle sockets are closed after 5 s, as by Node's global agent: well before the cluster's own idle
    // timeout (2 min), so a request never goes out on a connection the server is closing.
    const keepAlive = { keepAlive: true, timeout: 5_000 };
    this.restAgent = settings.secure
      ? new https.Agent({
          ...keepAlive,
          ...(options.ca ? { secureContext: createSecureContext({ ca: options.ca }) } : {}),
        })
      : new http.Agent(keepAlive);
    this.authorization =
      settings.user !== undefined && settings.pass !== undefined
        ? `Basic ${Buffer.from(`${settings.user}:${settings.pass}`).toString('base64')}`
        : undefined;
  }

  /**
   * The /add query: addParams under the names the cluster server reads (api/add.go
   * AddParamsFromQuery), in the spec's field order, then the pinParams: /add reads the pin options too
   * (AddParams embeds PinOptions), so the pin /add makes already has its name, expiry and replication
   * instead of the defaults until the POST /pins that follows. Only configured fields are sent.
   */
  addQuery(sealedId?: string): string {
    const add = this.settings.addParams ?? {};
    const query = new URLSearchParams();
    const names: Array<[keyof typeof add, string]> = [
      ['local', 'local'],
      ['recursive', 'recursive'],
      ['hidden', 'hidden'],
      ['wrap', 'wrap-with-directory'],
      ['shard', 'shard'],
      ['streamChannels', 'stream-channels'],
      ['noPin', 'no-pin'],
    ];
    for (const [field, name] of names) {
      if (add[field] !== undefined) query.append(name, String(add[field]));
    }
    for (const [name, value] of this.pinOptions(sealedId)) query.append(name, value);
    return query.toString();
  }

  /** The POST /pins/{cid} query from pinParams (api/types.go PinOptions.FromQuery names). */
  pinQuery(sealedId?: string): string {
    return new URLSearchParams(this.pinOptions(sealedId)).toString();
  }

  /**
   * The pin options. A pin of a sealed message is named after it, `sealpost:<sealed id>` (pinParams.name, when
   * set, in place of `sealpost`), so that `ipfs-cluster-ctl status` or `pin ls` tells which message a CID is.
   */
  private pinOptions(sealedId?: string): Array<[string, string]> {
    const pin = this.settings.pinParams ?? {};
    const options: Array<[string, string]> = [];
    if (pin.replicationFactorMin !== undefined) options.push(['replication-min', String(pin.replicationFactorMin)]);
    if (pin.replicationFactorMax !== undefined) options.push(['replication-max', String(pin.replicationFactorMax)]);
    const name = sealedId === undefined ? pin.name : `${pin.name ?? 'sealpost'}:${sealedId}`;
    if (name !== undefined) options.push(['name', name]);
    const expireIn = expireInToSend(pin);
    if (expireIn !== undefined) options.push(['expire-in', expireIn]);
    return options;
  }

  /**
   * GET /id. The peer answers 200 even when its IPFS daemon is down: that shows in `ipfs.error`
   * (api.ID.IPFS.Error), which `ready` turns into a failure.
   */
  async id(): Promise<{ id: string; ipfsError: string }> {
    return this.call('GET', '/id', {}, async (res) => {
      const answer = (await this.readJsonAnswer(res, 'GET /id')) as { id?: unknown; ipfs?: { error?: unknown } } | null;
      if (!answer || typeof answer !== 'object' || typeof answer.id !== 'string') {
        throw new ClusterError(this.name, 'protocol', 'GET /id answered without a peer id');
      }
      return { id: answer.id, ipfsError: typeof answer.ipfs?.error === 'string' ? answer.ipfs.error : '' };
    });
  }

  /** Readiness: the peer answers and its IPFS daemon too. */
  async ready(): Promise<{ id: string }> {
    const { id, ipfsError } = await this.id();
    if (ipfsError !== '')
      throw new ClusterError(
        this.name,
        'unreachable',
        `peer ${id} answers, but its IPFS daemon does not: ${ipfsError}`,
      );
    return { id };
  }

  /**
   * The read path's readiness: the IPFS API readers are served through (`ipfsApi`, by default the
   * peer's IPFS proxy on IPFS_PROXY_PORT) answers POST /api/v0/version as Kubo does. The REST API's
   * /id says nothing about it: with a wrong proxy port, /id is fine while every read fails.
   */
  async ipfsVersion(): Promise<string> {
    return this.call(
      'POST',
      '/api/v0/version',
      {},
      async (res) => {
        if (res.statusCode !== 200) {
          const denied = (res.statusCode === 401 || res.statusCode === 403) && this.withholdsProxyCredentials();
          throw await this.httpError(
            res,
            `POST /api/v0/version at the ${this.ipfsApiSource}`,
            denied ? PROXY_CREDENTIALS_HINT : undefined,
          );
        }
        let answer: { Version?: unknown } | null = null;
        try {
          answer = JSON.parse((await readBody(res, MAX_ANSWER_BYTES)).toString('utf8')) as { Version?: unknown };
        } catch {
          // not JSON: told below
        }
        if (typeof answer?.Version !== 'string')
          throw new ClusterError(
            this.name,
            'protocol',
            `${this.ipfsApiSource} answered POST /api/v0/version without a Version: not an IPFS API`,
          );
        return answer.Version;
      },
      undefined,
      true,
    );
  }

  /**
   * POST /add with one multipart part holding `content`, streamed (chunked transfer encoding).
   * Understands both answers: newline-delimited JSON with the X-Stream-Error trailer
   * (stream-channels true, the default) and one JSON array (stream-channels false).
   */
  async add(content: AsyncIterable<Buffer>, fileName: string, sealedId?: string): Promise<AddResult> {
    const boundary = `sealpost-${randomBytes(12).toString('hex')}`;
    const query = this.addQuery(sealedId);
    const path = `/add${query ? `?${query}` : ''}`;
    const streamed = this.settings.addParams?.streamChannels !== false;
    const wrapped = this.settings.addParams?.wrap === true;
    const preamble = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${fileName}"\r\n` +
        'Content-Type: application/octet-stream\r\n\r\n',
    );
    const epilogue = Buffer.from(`\r\n--${boundary}--\r\n`);

    let sourceError: SourceFailure | undefined;
    try {
      return await this.call(
        'POST',
        path,
        { 'content-type': `multipart/form-data; boundary=${boundary}` },
        async (res) => {
          if (res.statusCode !== 200) {
            throw await this.httpError(res, 'POST /add');
          }
          const text = (await readBody(res, MAX_ANSWER_BYTES)).toString('utf8');
          const trailer = res.trailers['x-stream-error'];
          if (trailer) throw new ClusterError(this.name, 'http', `POST /add failed: ${trailer}`, 500);
          const outputs = parseAddAnswer(text, streamed);
          const root = outputs.filter((output) => !(output.name ?? '').includes('/')).at(-1);
          const cid = root ? cidText(root.cid) : undefined;
          if (!cid) throw new ClusterError(this.name, 'protocol', 'POST /add answered without a CID');
          return { cid, wrapped, size: root?.size };
        },
        async (req) => {
          const iterator = content[Symbol.asyncIterator]();
          // The source yields small pieces (the cipher's header, each update, the tag): they are sent in
          // batches of up to UPLOAD_BATCH_BYTES, each one write (and, on this path, one system call). A
          // message that fits in the first batch goes out whole with a Content-Length, like any client's.
          let batch: Buffer[] = [preamble];
          let batched = preamble.length;
          let first = true;
          try {
            for (;;) {
              let next: IteratorResult<Buffer>;
              try {
                next = await iterator.next();
              } catch (error) {
                sourceError = new SourceFailure(error);
                req.destroy(sourceError);
                return;
              }
              if (next.done) break;
              batch.push(next.value);
              batched += next.value.length;
              if (batched >= UPLOAD_BATCH_BYTES) {
                await write(req, Buffer.concat(batch, batched));
                batch = [];
                batched = 0;
                first = false;
              }
            }
            batch.push(epilogue);
            const rest = Buffer.concat(batch, batched + epilogue.length);
            if (first) req.setHeader('content-length', rest.length);
            req.end(rest);
          } catch {
            // The connection failed; the request's 'error' (or the answer already received) tells why.
            await iterator.return?.();
          }
        },
      );
    } catch (error) {
      if (sourceError) throw sourceError.original;
      throw error;
    }
  }

  /** POST /pins/{cid} with this cluster's pinParams, named after the sealed message when given. */
  async pin(cid: string, sealedId?: string): Promise<void> {
    const query = this.pinQuery(sealedId);
    await this.call('POST', `/pins/${encodeURIComponent(cid)}${query ? `?${query}` : ''}`, {}, async (res) => {
      await this.readJsonAnswer(res, `POST /pins/${cid}`);
    });
  }

  /**
   * GET /pins/{cid}: the cluster's status of the CID on its peers (api.GlobalPinInfo), folded into one
   * state. A 200 to POST /pins only means the pin was accepted; IPFS pins asynchronously and may fail.
   */
  async pinStatus(cid: string): Promise<PinState> {
    const info = await this.pinInfo(cid);
    return info ? foldPeerMap(info) : { state: 'pin_error', error: 'the CID is not in the pinset' };
  }

  /** GET /pins/{cid} as the REST API answers it (api.GlobalPinInfo); undefined for a 404. */
  async pinInfo(cid: string): Promise<GlobalPinInfo | undefined> {
    return this.call('GET', `/pins/${encodeURIComponent(cid)}`, {}, async (res) => {
      if (res.statusCode === 404) return void res.resume();
      return (await this.readJsonAnswer(res, `GET /pins/${cid}`)) as GlobalPinInfo;
    });
  }

  /** POST /pins/{cid}/recover: asks every peer to try a pin in error again (api/rest RecoverHandler). */
  async recover(cid: string): Promise<void> {
    await this.call('POST', `/pins/${encodeURIComponent(cid)}/recover`, {}, async (res) => {
      await this.readJsonAnswer(res, `POST /pins/${cid}/recover`);
    });
  }

  /** DELETE /pins/{cid}. A 404 (not in the pinset) counts as done: the pin is gone either way. */
  async unpin(cid: string): Promise<void> {
    await this.call('DELETE', `/pins/${encodeURIComponent(cid)}`, {}, async (res) => {
      if (res.statusCode === 404) return void res.resume();
      await this.readJsonAnswer(res, `DELETE /pins/${cid}`);
    });
  }

  /**
   * Reads content through the peer's IPFS proxy (`POST /api/v0/cat?arg=...`, at the cluster's `ipfsApi`,
   * by default its host on IPFS_PROXY_PORT) into `sink`. Plain HTTP unless `ipfsApi` is https (a TLS front
   * of the operator's): the real proxy cannot serve TLS (api/ipfsproxy's config has a listen
   * address and timeouts, no certificate; it calls http.Server.Serve). So the cluster's Basic
   * credentials go to the proxy (where Kubo's API.Authorizations may check them) only for a cluster
   * with `secure: false`, whose REST calls carry them in clear anyway; a `secure` cluster's password
   * is never sent unencrypted. `offline` is Kubo's global option: only the blocks the daemon holds are read,
   * none fetched from its peers (the scrub's question is this cluster's own copy). Returns the byte count.
   */
  async cat(path: string, sink: Writable, offline = false): Promise<number> {
    return this.call(
      'POST',
      `/api/v0/cat?arg=${encodeURIComponent(path)}${offline ? '&offline=true' : ''}`,
      {},
      async (res) => {
        if (res.statusCode !== 200) {
          const denied = (res.statusCode === 401 || res.statusCode === 403) && this.withholdsProxyCredentials();
          throw await this.httpError(
            res,
            `POST /api/v0/cat at the ${this.ipfsApiSource}`,
            denied ? PROXY_CREDENTIALS_HINT : undefined,
          );
        }
        let bytes = 0;
        res.on('data', (chunk: Buffer) => (bytes += chunk.length));
        await pipeline(res, sink);
        const trailer = res.trailers['x-stream-error'];
        if (trailer) throw new ClusterError(this.name, 'http', `cat ${path} failed midway: ${trailer}`, 500);
        const expected = Number(res.headers['x-content-length']);
        if (res.headers['x-content-length'] !== undefined && expected !== bytes) {
          throw new ClusterError(this.name, 'protocol', `cat ${path} gave ${bytes} of ${expected} bytes`);
        }
        return bytes;
      },
      undefined,
      true,
    );
  }

  /** One exchange with the cluster under its deadline; errors come out as ClusterError. */
  private async call<T>(
    method: string,
    path: string,
    headers: Record<string, string>,
    onResponse: (res: IncomingMessage) => Promise<T>,
    upload?: (req: ClientRequest) => Promise<void>,
    proxy = false,
  ): Promise<T> {
    const secure = proxy ? this.ipfsApi.protocol === 'https:' : this.settings.secure;
    const transport = secure ? https : http;
    const authorization = proxy && this.withholdsProxyCredentials() ? undefined : this.authorization;
    let timedOut = false;
    const req = transport.request({
      // The proxy (plain HTTP, reads) goes through Node's global agent; the REST API through ours.
      ...(proxy ? (secure && this.options.ca ? { ca: this.options.ca } : {}) : { agent: this.restAgent }),
      // URL.hostname keeps an IPv6 address in brackets, which the request's host must not have.
      host: proxy ? this.ipfsApi.hostname.replace(/^\[(.*)\]$/, '$1') : this.settings.host,
      port: proxy ? Number(this.ipfsApi.port || (secure ? 443 : 80)) : Number(this.settings.port),
      method,
      path,
      headers: { ...(authorization ? { authorization } : {}), ...headers },
    });
    const timer = setTimeout(() => {
      timedOut = true;
      req.destroy(
        new ClusterError(
          this.name,
          'timeout',
          `no complete answer to ${method} ${path.split('?')[0]} within ${this.settings.timeout}`,
        ),
      );
    }, this.timeout);
    try {
      // Errors reach us through the promises below; these listeners only keep a late one (after a
      // destroy) from becoming an uncaught exception.
      req.on('error', () => undefined);
      const response = new Promise<IncomingMessage>((resolve, reject) => {
        req.once('response', (res: IncomingMessage) => {
          res.on('error', () => undefined);
          resolve(res);
        });
        req.once('error', reject);
      });
      // The upload's own failures surface through the request ('error') or the response.
      if (upload) upload(req).catch((error: unknown) => req.destroy(error as Error));
      else req.end();
      const res = await response;
      return await onResponse(res);
    } catch (error) {
      if (error instanceof SourceFailure) throw error;
      throw this.toClusterError(error, timedOut, method, path, proxy);
    } finally {
      clearTimeout(timer);
      if (!req.destroyed && !req.writableFinished) req.destroy();
    }
  }

  /** A secure cluster's credentials would travel in clear to its plain-HTTP IPFS proxy: not sent. */
  private withholdsProxyCredentials(): boolean {
    return this.authorization !== undefined && this.settings.secure && this.ipfsApi.protocol !== 'https:';
  }

  private toClusterError(error: unknown, timedOut: boolean, method: string, path: string, proxy = false): ClusterError {
    // A read goes to the IPFS API, not the REST API the cluster's name shows: say where it went.
    const at = proxy ? ` at the ${this.ipfsApiSource}` : '';
    if (timedOut) {
      return new ClusterError(
        this.name,
        'timeout',
        `no complete answer to ${method} ${path.split('?')[0]} within ${this.settings.timeout}${at}`,
        undefined,
        { cause: error },
      );
    }
    if (error instanceof ClusterError) return error;
    const code = (error as NodeJS.ErrnoException)?.code ?? '';
    const message = error instanceof Error ? error.message : String(error);
    if (TLS_CODES.has(code) || /ssl|tls|certificate/i.test(message)) {
      return new ClusterError(
        this.name,
        'tls',
        `HTTPS failed: ${message} (trust a private CA with IPFS_CLUSTER_CA_FILE, ` +
          'or configure secure: false for plain HTTP)',
        undefined,
        { cause: error },
      );
    }
    return new ClusterError(
      this.name,
      'unreachable',
      `${method} ${path.split('?')[0]} failed: ${code || message}${at}`,
      undefined,
      { cause: error },
    );
  }

  /** A JSON answer of the REST API; non-2xx statuses become ClusterError with the cluster's message. */
  private async readJsonAnswer(res: IncomingMessage, what = 'request'): Promise<unknown> {
    if (res.statusCode === undefined || res.statusCode < 200 || res.statusCode > 299)
      throw await this.httpError(res, what);
    const text = (await readBody(res, MAX_ANSWER_BYTES)).toString('utf8');
    try {
      return text.trim() === '' ? null : JSON.parse(text);
    } catch {
      throw new ClusterError(this.name, 'protocol', `${what} answered with something that is not JSON`);
    }
  }

  /** The REST API's `{"code":N,"message":"..."}` (Kubo: `{"Message":...}`, or text) as a ClusterError. */
  private async httpError(res: IncomingMessage, what: string, hint?: string): Promise<ClusterError> {
    const status = res.statusCode ?? 0;
    let detail = '';
    try {
      const text = (await readBody(res, 64 * 1024)).toString('utf8').trim();
      try {
        const json = JSON.parse(text) as { message?: unknown; Message?: unknown };
        detail = String(json.message ?? json.Message ?? text);
      } catch {
        detail = text;
      }
    } catch {
      // the status is enough
    }
    return new ClusterError(
      this.name,
      'http',
      `${what} answered ${status}${detail ? `: ${detail.slice(0, 500)}` : ''}${hint ? ` (${hint})` : ''}`,
      status,
    );
  }
}

/** The parts of api.GlobalPinInfo that Sealpost reads. */
export interface GlobalPinInfo {
  cid: string;
  name: string;
  allocations: string[] | null;
  peer_map: Record<string, { status?: unknown; error?: unknown; peername?: unknown }> | null;
}

/** Where a CID stands on one cluster, as Sealpost records it. */
export type PinState = { state: 'pinned' | 'pinning' } | { state: 'pin_error'; error: string };

/** Tracker statuses (api/types.go TrackerStatus) that mean a peer is on its way to holding the CID. */
const ON_THE_WAY = new Set(['pinning', 'pin_queued']);
/** Peers that hold no allocation for the CID (replication below the peer count): not asked to pin it. */
const NOT_ALLOCATED = new Set(['remote', 'sharded']);

/**
 * One state from a GlobalPinInfo: an error on any allocated peer wins (with the peer's message), then
 * any peer still pinning; `pinned` only when every allocated peer holds the CID.
 */
export function foldPeerMap(answer: GlobalPinInfo): PinState {
  const peerMap = answer?.peer_map;
  const peers = Object.entries(peerMap ?? {}).filter(([, info]) => !NOT_ALLOCATED.has(String(info.status)));
  if (peers.length === 0) return { state: 'pin_error', error: 'no peer of the cluster is allocated to the CID' };
  const errors: string[] = [];
  let onTheWay = false;
  for (const [peer, info] of peers) {
    const status = String(info.status);
    if (status === 'pinned') continue;
    if (ON_THE_WAY.has(status)) onTheWay = true;
    else errors.push(`peer ${String(info.peername || peer)}: ${status}${info.error ? `: ${String(info.error)}` : ''}`);
  }
  if (errors.length > 0) return { state: 'pin_error', error: errors.join('; ') };
  return { state: onTheWay ? 'pinning' : 'pinned' };
}

function write(req: ClientRequest, chunk: Buffer): Promise<void> {
  if (req.destroyed) return Promise.reject(new Error('connection closed during upload'));
  if (req.write(chunk)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = () => {
      req.off('drain', done);
      req.off('close', closed);
      resolve();
    };
    const closed = () => {
      req.off('drain', done);
      reject(new Error('connection closed during upload'));
    };
    req.once('drain', done);
    req.once('close', closed);
  });
}

async function readBody(res: IncomingMessage, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new Error(`answer larger than ${limit} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function parseAddAnswer(text: string, streamed: boolean): AddedOutput[] {
  const trimmed = text.trim();
  if (trimmed === '' || trimmed === 'null') return [];
  if (!streamed || trimmed.startsWith('[')) {
    const parsed = JSON.parse(trimmed) as AddedOutput[] | null;
    return Array.isArray(parsed) ? parsed : [];
  }
  return trimmed
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as AddedOutput);
}

/** AddedOutput.cid is a plain string in the REST API's JSON; older versions wrote {"/": "Qm..."}. */
function cidText(cid: AddedOutput['cid']): string | undefined {
  if (typeof cid === 'string' && cid !== '') return cid;
  if (cid && typeof cid === 'object' && typeof cid['/'] === 'string') return cid['/'];
  return undefined;
}
