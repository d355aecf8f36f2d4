/**
 * The REST API listener (real default 127.0.0.1:9094), answering like
 * ipfs-cluster/ipfs-cluster api/rest/restapi.go on top of api/common/api.go:
 * - Errors: SendResponse + the REST API's APIErrorFunc give
 *   {"code": <status>, "message": "<error>"} (api.Error, api/types.go). An
 *   error whose text is state.ErrNotFound ("pin is not part of the pinset")
 *   becomes 404, any other error from the cluster 500; bad input is 400.
 * - Basic auth (authHandler): no/unparsable credentials -> 401 "unauthorized:
 *   no auth provided" with two WWW-Authenticate headers (Bearer and Basic);
 *   wrong ones -> 401 "unauthorized: access denied"; a Bearer token -> 401
 *   "unauthorized: invalid token" (the stand-in issues no JWTs). OPTIONS and
 *   GET /health pass without credentials.
 * - A path ending in "/" is redirected 307 without it (strictSlashHandler);
 *   an unknown path is 404 {"code":404,"message":"not found"}; a known path
 *   with another method is gorilla/mux's bare 405.
 * - Streams (GET /pins, GET /allocations) are newline-delimited JSON with an
 *   (empty on success) X-Stream-Error trailer, or 204 when empty (StreamResponse).
 * - A pin or unpin by IPFS path (POST/DELETE /pins/{ipfs|ipns|ipld}/{path}),
 *   which is what ipfs-cluster-ctl sends for `pin add` and `pin rm`, acts on
 *   the CID the path resolves to, as /pins/{cid} does.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { handleAdd, type AddContext } from './add.ts';
import { goJsonLine, goQueryEscape, goTime, type GoQuery } from './go-compat.ts';
import { decodeCid, type IpfsPath, ParamError, parseIpfsPath, type PinOptions, pinOptionsFromQuery } from './params.ts';
import { makePin, replicationError, type ClusterPin, type Identity } from './state.ts';

/** version/version.go of the cluster release the stand-in imitates. */
export const CLUSTER_VERSION = '1.1.6';
const RPC_PROTOCOL = '/ipfscluster/1.0/rpc';
const NOT_FOUND = 'pin is not part of the pinset'; // state.ErrNotFound

export interface RestContext extends AddContext {
  identity: Identity;
  /** Where this peer's IPFS daemon stands: fetching a pinned DAG, or failed to pin it. */
  ipfs: IpfsPinning;
  peerName: string;
  user?: string;
  pass?: string;
  /** host:port of each listener, for the peer's addresses. */
  restAddress(): { host: string; port: number };
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  res.setHeader('Content-Type', 'application/json');
  res.writeHead(status);
  res.end(goJsonLine(value));
}

export function sendError(res: ServerResponse, status: number, message: string): void {
  sendJson(res, status, { code: status, message });
}

/** authHandler (api/common/api.go); returns true when the request may go on. */
function checkAuth(ctx: RestContext, req: IncomingMessage, res: ServerResponse, path: string): boolean {
  if (ctx.user === undefined || ctx.pass === undefined) return true;
  if (req.method === 'OPTIONS' || (req.method === 'GET' && path === '/health')) return true;
  const header = req.headers.authorization ?? '';
  const realm = 'realm="Restricted IPFS Cluster API"';
  // Go's (*Request).BasicAuth: "Basic " (any case), base64, user:pass split at the first ':'.
  if (/^basic /i.test(header)) {
    const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon >= 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(header.slice(6))) {
      const [u, p] = [decoded.slice(0, colon), decoded.slice(colon + 1)];
      // verifyBasicAuth: empty user or password never matches.
      if (u !== '' && p !== '' && u === ctx.user && p === ctx.pass) return true;
      res.setHeader('WWW-Authenticate', `Basic ${realm}`);
      sendError(res, 401, 'unauthorized: access denied');
      return false;
    }
  } else if (/^bearer /i.test(header)) {
    res.setHeader('WWW-Authenticate', `Bearer ${realm}, error="invalid_token"`);
    sendError(res, 401, 'unauthorized: invalid token');
    return false;
  }
  res.setHeader('WWW-Authenticate', [`Bearer ${realm}`, `Basic ${realm}`]);
  sendError(res, 401, 'unauthorized: no auth provided');
  return false;
}

/**
 * The IPFS daemon's side of pinning, which the real cluster delegates to Kubo: a pin is accepted at
 * once, then the daemon fetches the DAG from its peers (pinning) and holds it (pinned), or fails
 * (pin_error) - when it is down, or when no peer has the blocks.
 */
export interface IpfsPinning {
  /** The daemon's error as /id reports it ('' when it answers). */
  error(): string;
  /** Starts pinning a CID the cluster accepted; a CID pinned while the daemon is down fails. */
  pin(cid: string): void;
  /** Why the daemon failed to pin the CID, if it did. */
  problem(cid: string): string | undefined;
  forget(cid: string): void;
}

/** api.ID of this one-peer cluster. */
function idJson(ctx: RestContext) {
  const { host, port } = ctx.restAddress();
  const id = ctx.identity.id;
  return {
    id,
    addresses: [`/ip4/${host}/tcp/${port}/p2p/${id}`],
    cluster_peers: [id],
    cluster_peers_addresses: [],
    version: CLUSTER_VERSION,
    commit: '',
    rpc_protocol_version: RPC_PROTOCOL,
    error: '',
    ipfs: { id: ctx.identity.ipfsId, addresses: [], error: ctx.ipfs.error() },
    peername: ctx.peerName,
  };
}

/**
 * api.GlobalPinInfo for one CID. Status "pin_error" when the daemon failed to pin it, "pinning" while
 * it fetches the DAG (or has not got the root block), "pinned" once it holds it, "unpinned" when not
 * in the pinset (Cluster.globalPinInfoCid does the same, 200). A CID not in the pinset has
 * `allocations: []` (checked against the real server by the conformance suite), `origins: null`, and
 * the time of the answer as `created`.
 */
async function globalPinInfo(ctx: RestContext, cid: string, pin: ClusterPin | undefined) {
  let status = 'unpinned';
  const problem = pin ? ctx.ipfs.problem(cid) : undefined;
  if (problem) status = 'pin_error';
  else if (pin) status = (await ctx.blocks.has(decodeCid(cid))) ? 'pinned' : 'pinning';
  return {
    cid,
    name: pin?.name ?? '',
    allocations: pin?.allocations ?? [],
    origins: pin ? pin.origins : null,
    created: pin?.timestamp ?? goTime(Date.now()),
    metadata: pin?.metadata ?? null,
    peer_map: {
      [ctx.identity.id]: {
        peername: ctx.peerName,
        ipfs_peer_id: ctx.identity.ipfsId,
        status,
        timestamp: goTime(Date.now()),
        error: problem ?? '',
        attempt_count: 0,
        priority_pin: false,
      },
    },
  };
}

/**
 * StreamResponse: ndjson with `Trailer: X-Stream-Error` (set empty on success), 204 when empty. The real
 * 204 announces the trailer too, but Node refuses a Trailer header on a response without a chunked body
 * (it throws), and a 204 has no body to follow, so the empty answer goes without it.
 */
function sendStream(res: ServerResponse, items: unknown[]): void {
  res.setHeader('Content-Type', 'application/json');
  if (items.length === 0) {
    res.writeHead(204);
    res.end();
    return;
  }
  res.setHeader('Trailer', 'X-Stream-Error');
  res.writeHead(200);
  for (const item of items) res.write(goJsonLine(item));
  res.addTrailers({ 'X-Stream-Error': '' });
  res.end();
}

type Handler = (
  ctx: RestContext,
  req: IncomingMessage,
  res: ServerResponse,
  q: GoQuery,
  hash?: string,
) => Promise<void>;

/** ParseCidOrFail: the {hash} path variable and PinOptions from the query, else 400. */
function parseCidAndOptions(hash: string, q: GoQuery) {
  let cid: string;
  try {
    cid = decodeCid(hash).toString();
  } catch (err) {
    throw new ParamError(`error decoding Cid: ${(err as Error).message}`);
  }
  return { cid, opts: pinOptionsFromQuery(q) };
}

/** ParsePinPathOrFail: the {keyType}/{path} variables as one IPFS path (boxo's NewPath), else 400. */
function parsePinPath(keyTypeAndPath: string): IpfsPath {
  try {
    return parseIpfsPath(keyTypeAndPath.replace(/\/$/, ''));
  } catch (err) {
    throw new ParamError(`error parsing path: ${(err as Error).message}`);
  }
}

/**
 * The IPFS connector's Resolve (ipfsconn/ipfshttp): /ipfs/{cid} and /ipld/{cid} need no daemon; a
 * longer path, or an /ipns name, goes to Kubo's `resolve`, whose refusal the cluster answers 500
 * "IPFS error (resolve?arg=…). Code: 500. Message: …". The stand-in's daemon names nothing: for an
 * /ipns path it answers what Kubo without routing answers.
 */
async function resolvePinPath(ctx: RestContext, path: IpfsPath): Promise<string> {
  if (path.root && path.rest.length === 0) return path.root.toString();
  const call = `resolve?arg=${goQueryEscape(path.path)}`;
  const down = ctx.ipfs.error();
  if (down) throw new Error(`Post "http://127.0.0.1:5001/api/v0/${call}": ${down}`);
  try {
    if (!path.root) throw new Error('could not resolve name');
    return (await ctx.blocks.resolvePath(path.root, path.rest)).toString();
  } catch (err) {
    throw new Error(`IPFS error (${call}). Code: 500. Message: ${(err as Error).message}`);
  }
}

/** Cluster.Pin: the pin joins the pinset and the IPFS daemon starts fetching it; answers the pin. */
async function pinCid(ctx: RestContext, res: ServerResponse, cid: string, opts: PinOptions): Promise<void> {
  if (ctx.failPins()) return sendError(res, 500, failPinsMessage);
  const made = makePin(cid, opts, ctx.identity.id);
  const bad = replicationError(made);
  if (bad) return sendError(res, 500, bad);
  await ctx.pins.set(made);
  ctx.ipfs.pin(cid);
  sendJson(res, 200, made);
}

/**
 * Cluster.Unpin: the pin leaves the pinset and the answer is the pin as it was stored; a CID outside
 * the pinset is state.ErrNotFound, 404. The IPFS daemon unpins but keeps the blocks until its garbage
 * collection, so the content still reads through the proxy, as it does from Kubo.
 */
async function unpinCid(ctx: RestContext, res: ServerResponse, cid: string, optionsError?: string): Promise<void> {
  if (ctx.failPins()) return sendError(res, 500, failPinsMessage);
  const pin = ctx.pins.get(cid);
  if (pin) {
    await ctx.pins.delete(cid);
    ctx.ipfs.forget(cid);
  }
  const outcome = pin ?? { code: 404, message: NOT_FOUND };
  if (optionsError !== undefined) return sendAfterOptionsError(res, optionsError, outcome);
  sendJson(res, pin ? 200 : 404, outcome);
}

/**
 * ParseCidOrFail and ParsePinPathOrFail answer 400 for bad pin options (which an unpin does not use)
 * and then carry on: the real server unpins all the same and writes the outcome after the error.
 */
function sendAfterOptionsError(res: ServerResponse, optionsError: string, outcome: unknown): void {
  res.setHeader('Content-Type', 'application/json');
  res.writeHead(400);
  res.write(goJsonLine({ code: 400, message: optionsError }));
  res.end(goJsonLine(outcome));
}

/** PinOptions.FromQuery's refusal, if any: DELETE parses the options it does not use. */
function optionsError(q: GoQuery): string | undefined {
  try {
    pinOptionsFromQuery(q);
    return undefined;
  } catch (err) {
    if (err instanceof ParamError) return err.message;
    throw err;
  }
}

const failPinsMessage = 'failPins: the IPFS Cluster stand-in was told to fail pin operations';

const routes: Array<{ method: string; pattern: RegExp; handler: Handler }> = [
  { method: 'GET', pattern: /^\/id$/, handler: async (ctx, _req, res) => sendJson(res, 200, idJson(ctx)) },
  {
    method: 'GET',
    pattern: /^\/version$/,
    handler: async (_c, _r, res) => sendJson(res, 200, { version: CLUSTER_VERSION }),
  },
  {
    method: 'GET',
    pattern: /^\/health$/,
    handler: async (_c, _r, res) => {
      res.setHeader('Content-Type', 'application/json');
      res.writeHead(204);
      res.end();
    },
  },
  { method: 'POST', pattern: /^\/add$/, handler: (ctx, req, res, q) => handleAdd(ctx, req, res, q) },
  {
    method: 'GET',
    pattern: /^\/pins$/,
    handler: async (ctx, _req, res, q) => {
      if (ctx.failPins()) return sendError(res, 500, failPinsMessage);
      const filter = q.get('filter');
      const known = [
        'pinned',
        'pinning',
        'unpinned',
        'queued',
        'pin_queued',
        'error',
        'pin_error',
        'remote',
        'cluster_error',
        'unpin_error',
        'unpinning',
        'unpin_queued',
        'sharded',
        'unexpectedly_unpinned',
        'undefined',
      ];
      const wanted = filter.split(',').filter((f) => known.includes(f.trim()));
      if (filter !== '' && wanted.length === 0) return sendError(res, 400, 'invalid filter value');
      const cids = q.get('cids');
      let items;
      if (cids !== '') {
        items = [];
        for (const c of cids.split(',')) {
          let cid: string;
          try {
            cid = decodeCid(c).toString();
          } catch (err) {
            return sendError(res, 400, `error decoding Cid: ${(err as Error).message}`);
          }
          items.push(await globalPinInfo(ctx, cid, ctx.pins.get(cid)));
        }
        return sendStream(res, items); // statusCidsHandler streams too
      }
      items = [];
      for (const pin of ctx.pins.all().values()) {
        const gpi = await globalPinInfo(ctx, pin.cid, pin);
        const status = Object.values(gpi.peer_map)[0]!.status;
        if (wanted.length === 0 || wanted.some((w) => w === status || (w === 'queued' && status === 'pin_queued'))) {
          items.push(gpi);
        }
      }
      sendStream(res, items);
    },
  },
  {
    method: 'GET',
    pattern: /^\/pins\/([^/]+)$/,
    handler: async (ctx, _req, res, q, hash) => {
      const { cid } = parseCidAndOptions(hash!, q);
      if (ctx.failPins()) return sendError(res, 500, failPinsMessage);
      sendJson(res, 200, await globalPinInfo(ctx, cid, ctx.pins.get(cid)));
    },
  },
  {
    method: 'POST',
    pattern: /^\/pins\/([^/]+)$/,
    handler: async (ctx, _req, res, q, hash) => {
      const { cid, opts } = parseCidAndOptions(hash!, q);
      await pinCid(ctx, res, cid, opts);
    },
  },
  {
    // RecoverHandler: the peers try a pin in error again; answers the GlobalPinInfo.
    method: 'POST',
    pattern: /^\/pins\/([^/]+)\/recover$/,
    handler: async (ctx, _req, res, q, hash) => {
      const { cid } = parseCidAndOptions(hash!, q);
      if (ctx.failPins()) return sendError(res, 500, failPinsMessage);
      const pin = ctx.pins.get(cid);
      if (!pin) return sendError(res, 404, NOT_FOUND);
      if (ctx.ipfs.problem(cid)) ctx.ipfs.pin(cid);
      sendJson(res, 200, await globalPinInfo(ctx, cid, pin));
    },
  },
  {
    method: 'DELETE',
    pattern: /^\/pins\/([^/]+)$/,
    handler: async (ctx, _req, res, q, hash) => {
      let cid: string;
      try {
        cid = decodeCid(hash!).toString();
      } catch (err) {
        throw new ParamError(`error decoding Cid: ${(err as Error).message}`);
      }
      await unpinCid(ctx, res, cid, optionsError(q));
    },
  },
  {
    // UnpinPath, what `ipfs-cluster-ctl pin rm` sends: DELETE /pins/ipfs/{cid}, or a path to resolve.
    method: 'DELETE',
    pattern: /^\/pins(\/(?:ipfs|ipns|ipld)\/.*)$/,
    handler: async (ctx, _req, res, q, keyTypeAndPath) => {
      const path = parsePinPath(keyTypeAndPath!);
      const problem = optionsError(q);
      let cid: string;
      try {
        cid = await resolvePinPath(ctx, path);
      } catch (err) {
        if (problem === undefined) throw err;
        return sendAfterOptionsError(res, problem, { code: 500, message: (err as Error).message });
      }
      await unpinCid(ctx, res, cid, problem);
    },
  },
  {
    // PinPath, what `ipfs-cluster-ctl pin add` sends: POST /pins/ipfs/{cid}, or a path to resolve.
    method: 'POST',
    pattern: /^\/pins(\/(?:ipfs|ipns|ipld)\/.*)$/,
    handler: async (ctx, _req, res, q, keyTypeAndPath) => {
      const path = parsePinPath(keyTypeAndPath!);
      const opts = pinOptionsFromQuery(q);
      await pinCid(ctx, res, await resolvePinPath(ctx, path), opts);
    },
  },
  {
    method: 'GET',
    pattern: /^\/allocations$/,
    handler: async (ctx, _req, res) => sendStream(res, [...ctx.pins.all().values()]),
  },
  {
    method: 'GET',
    pattern: /^\/allocations\/([^/]+)$/,
    handler: async (ctx, _req, res, q, hash) => {
      const { cid } = parseCidAndOptions(hash!, q);
      const pin = ctx.pins.get(cid);
      if (!pin) return sendError(res, 404, NOT_FOUND);
      sendJson(res, 200, pin);
    },
  },
];

export async function handleRest(
  ctx: RestContext,
  req: IncomingMessage,
  res: ServerResponse,
  rawPath: string,
  q: GoQuery,
) {
  let path: string;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    path = rawPath;
  }
  if (!checkAuth(ctx, req, res, path)) return;
  if (path.length > 1 && path.endsWith('/')) {
    const query = req.url!.includes('?') ? req.url!.slice(req.url!.indexOf('?')) : '';
    res.writeHead(307, { Location: rawPath.slice(0, -1) + query });
    res.end();
    return;
  }
  const matching = routes.filter((r) => r.pattern.test(path));
  const route = matching.find((r) => r.method === req.method);
  if (!route) {
    if (matching.length > 0) {
      res.writeHead(405);
      res.end();
    } else {
      sendError(res, 404, 'not found');
    }
    return;
  }
  const hash = route.pattern.exec(path)?.[1];
  try {
    await route.handler(ctx, req, res, q, hash);
  } catch (err) {
    if (res.headersSent) {
      res.destroy(err as Error);
    } else if (err instanceof ParamError) {
      sendError(res, 400, err.message);
    } else {
      sendError(res, 500, err instanceof Error ? err.message : String(err));
    }
  }
}
