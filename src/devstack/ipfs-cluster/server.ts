/**
 * An IPFS Cluster stand-in for development and tests: a one-peer "cluster"
 * that speaks the real HTTP wire protocol on two listeners, like a real
 * `ipfs-cluster-service` with its Kubo daemon behind it:
 * - the REST API (real default port 9094; see rest-api.ts), optionally over TLS
 *   (the real REST API's ssl_cert_file/ssl_key_file) and Basic auth
 *   (basic_auth_credentials);
 * - the IPFS proxy (real default port 9095; see kubo-proxy.ts), plain HTTP like
 *   the real one, serving /api/v0/cat from the same blocks.
 * Blocks and pins live in `dataDir` and survive a restart. Both listeners bind
 * to 127.0.0.1 unless told otherwise, as the real defaults do.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { BlockStorage } from './blocks.ts';
import { GoQuery } from './go-compat.ts';
import { handleProxy } from './kubo-proxy.ts';
import { decodeCid } from './params.ts';
import { handleRest, sendError, type IpfsPinning, type RestContext } from './rest-api.ts';
import { loadIdentity, PinStore, type ClusterPin } from './state.ts';

export interface IpfsClusterStandInOptions {
  /** Address both listeners bind to. Default 127.0.0.1. */
  host?: string;
  /** REST API port; 0 picks a free one. The real default is 9094. */
  port: number;
  /** IPFS proxy port; 0 picks a free one. The real default is 9095. */
  proxyPort: number;
  /** Where blocks, pins and the peer identity are kept. */
  dataDir: string;
  /** Basic auth for the REST API (and Kubo's API.Authorizations behind the proxy). Both or neither. */
  user?: string;
  pass?: string;
  /**
   * Whether the Kubo behind the proxy checks `user`/`pass` (API.Authorizations). Default true;
   * false plays a Kubo without API.Authorizations (Kubo's default), open to whoever reaches the proxy.
   */
  proxyAuth?: boolean;
  /** Serve the REST API over HTTPS with this certificate (PEM). The proxy stays plain HTTP, as the real one. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** The cluster peer's name (service.json `peername`). */
  peerName?: string;
  /** Every request hangs without an answer (to test client timeouts). */
  hang?: boolean;
  /** Pin operations answer 500 (POST/GET/DELETE /pins..., and the pin at the end of /add). */
  failPins?: boolean;
  /**
   * Whether this peer's IPFS daemon fetches the blocks of a pinned CID from the other stand-ins of the
   * process, as peered Kubo nodes do over their swarm. Default true; false plays a daemon with no
   * peers: a pin of content it does not have stays `pinning`, then fails.
   */
  peering?: boolean;
}

/** The IPFS daemons of the stand-ins in this process that peer with each other (Peering.Peers). */
const swarm = new Set<BlockStorage>();

/** One request as received, for tests that assert what a client sent. */
export interface RecordedRequest {
  listener: 'rest' | 'proxy';
  method: string;
  /** The path exactly as received (still %-encoded). */
  path: string;
  /** The raw query string exactly as received, without the '?' ('' when none). */
  query: string;
  /** The query decoded as the Go server decodes it (url.Values). */
  params: Record<string, string[]>;
  /** Whether an Authorization header was sent. */
  authorization: boolean;
  /** Date.now() when the request arrived. */
  time: number;
}

export interface IpfsClusterStandIn {
  /** REST API base URL, e.g. http://127.0.0.1:9094 (https:// with `tls`). */
  url: string;
  /** IPFS proxy base URL, e.g. http://127.0.0.1:9095. */
  proxyUrl: string;
  port: number;
  proxyPort: number;
  /** Every request received on either listener, in order. */
  requests: RecordedRequest[];
  /** The current pinset (a copy): CID -> the api.Pin JSON the REST API returns. */
  pins(): Map<string, ClusterPin>;
  setHang(hang: boolean): void;
  setFailPins(fail: boolean): void;
  /**
   * Plays the IPFS daemon behind the peer stopped (true) or started again (false): pins fail, /id says so,
   * and the IPFS proxy answers 502 as the real one does when it cannot reach Kubo.
   */
  setIpfsDown(down: boolean): void;
  /** Flips a bit of the first leaf block of `cid` on disk (a damaged copy: same CID, wrong bytes). */
  damage(cid: string): Promise<void>;
  close(): Promise<void>;
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function urlHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

export async function startIpfsClusterStandIn(options: IpfsClusterStandInOptions): Promise<IpfsClusterStandIn> {
  const host = options.host ?? '127.0.0.1';
  if ((options.user === undefined) !== (options.pass === undefined)) {
    throw new Error('user and pass must be given together');
  }
  const blocks = await BlockStorage.open(options.dataDir);
  const pins = await PinStore.open(options.dataDir);
  const identity = await loadIdentity(options.dataDir);
  const requests: RecordedRequest[] = [];
  let hang = options.hang ?? false;
  let failPins = options.failPins ?? false;
  let ipfsDown = false;
  let restPort = 0;
  if (options.peering !== false) swarm.add(blocks);
  const problems = new Map<string, string>();
  const fetching = new Set<string>();
  const ipfs: IpfsPinning = {
    // The error the real cluster reports when Kubo's API does not answer (ipfshttp connector).
    error: () => (ipfsDown ? 'dial tcp 127.0.0.1:5001: connect: connection refused' : ''),
    pin(cid) {
      problems.delete(cid);
      if (ipfsDown) return void problems.set(cid, `pin: ${ipfs.error()}`);
      if (fetching.has(cid)) return;
      fetching.add(cid);
      const peers = options.peering === false ? [] : [...swarm].filter((peer) => peer !== blocks);
      blocks
        .fetchDag(decodeCid(cid), peers)
        .then((complete) => {
          if (!complete) problems.set(cid, 'pin: no peer has the blocks (the IPFS daemon timed out fetching them)');
        })
        .catch((error: unknown) => problems.set(cid, `pin: ${error instanceof Error ? error.message : String(error)}`))
        .finally(() => fetching.delete(cid));
    },
    problem: (cid) => problems.get(cid),
    forget: (cid) => void problems.delete(cid),
  };

  const ctx: RestContext = {
    blocks,
    pins,
    self: identity.id,
    identity,
    peerName: options.peerName ?? 'sealpost-devstack',
    user: options.user,
    pass: options.pass,
    failPins: () => failPins,
    ipfsError: () => ipfs.error(),
    ipfs,
    sendError,
    restAddress: () => ({ host, port: restPort }),
  };

  const down = () => ipfsDown;
  const proxyContext =
    options.proxyAuth === false ? { blocks, down } : { blocks, user: options.user, pass: options.pass, down };

  /** Records the request, then hangs or dispatches it. */
  const handler =
    (listener: RecordedRequest['listener']) =>
    (req: IncomingMessage, res: ServerResponse): void => {
      const url = req.url ?? '/';
      const q = url.indexOf('?');
      const path = q < 0 ? url : url.slice(0, q);
      const query = q < 0 ? '' : url.slice(q + 1);
      const parsed = new GoQuery(query);
      requests.push({
        listener,
        method: req.method ?? '',
        path,
        query,
        params: parsed.toRecord(),
        authorization: req.headers.authorization !== undefined,
        time: Date.now(),
      });
      if (hang) return; // never answer; close() ends the connection
      const done =
        listener === 'rest'
          ? handleRest(ctx, req, res, path, parsed)
          : handleProxy(proxyContext, req, res, safeDecode(path), parsed);
      done.catch((err: unknown) => {
        if (!res.headersSent) sendError(res, 500, err instanceof Error ? err.message : String(err));
        else res.destroy();
      });
    };

  // requestTimeout 0: like the real servers (read_timeout 0), big uploads may take their time.
  const rest: Server = options.tls
    ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key, requestTimeout: 0 }, handler('rest'))
    : createHttpServer({ requestTimeout: 0 }, handler('rest'));
  const proxy: Server = createHttpServer({ requestTimeout: 0 }, handler('proxy'));

  try {
    restPort = await listen(rest, options.port, host);
    const proxyPort = await listen(proxy, options.proxyPort, host);
    let closed: Promise<void> | undefined;
    return {
      url: `${options.tls ? 'https' : 'http'}://${urlHost(host)}:${restPort}`,
      proxyUrl: `http://${urlHost(host)}:${proxyPort}`,
      port: restPort,
      proxyPort,
      requests,
      pins: () => pins.all(),
      setHang: (b) => {
        hang = b;
      },
      setFailPins: (b) => {
        failPins = b;
      },
      setIpfsDown: (b) => {
        ipfsDown = b;
      },
      damage: (cid) => blocks.damage(decodeCid(cid)),
      close: () => {
        swarm.delete(blocks);
        closed ??= shutdown([rest, proxy], pins, blocks);
        return closed;
      },
    };
  } catch (err) {
    swarm.delete(blocks);
    await shutdown([rest, proxy], pins, blocks);
    throw err;
  }
}

function safeDecode(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

async function shutdown(servers: Server[], pins: PinStore, blocks: BlockStorage): Promise<void> {
  await Promise.all(
    servers.map(
      (s) =>
        new Promise<void>((resolve) => {
          if (!s.listening) return resolve();
          s.close(() => resolve());
          s.closeAllConnections(); // hung and keep-alive connections too
        }),
    ),
  );
  await pins.flush();
  await blocks.close();
}
