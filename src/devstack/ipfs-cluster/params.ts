/**
 * Query parameters of the REST API, parsed the way IPFS Cluster parses them:
 * - PinOptions.FromQuery (ipfs-cluster/ipfs-cluster api/types.go): pin options
 *   for POST /pins/{cid}, GET /pins/{cid} and /add.
 * - AddParamsFromQuery (api/add.go): the /add options.
 * Errors carry the real server's messages; the REST layer answers them 400.
 */
import { posix } from 'node:path';
import { CID } from 'multiformats/cid';
import { parseDuration } from '../../kernel/duration.ts';
import { type GoQuery, parseGoBool, parseGoInt } from './go-compat.ts';

export class ParamError extends Error {}

export interface PinOptions {
  replicationFactorMin: number;
  replicationFactorMax: number;
  name: string;
  mode: 'recursive' | 'direct';
  shardSize: number;
  userAllocations: string[] | null;
  /** Epoch ms, or null for Go's zero time (never expires). */
  expireAt: number | null;
  metadata: Record<string, string>;
  pinUpdate: string | null;
  origins: string[] | null;
}

export interface AddParams {
  pin: PinOptions;
  local: boolean;
  recursive: boolean;
  hidden: boolean;
  /** Query name `wrap-with-directory` (the JS client's `wrap` is ignored by the server). */
  wrap: boolean;
  shard: boolean;
  /** Default true: newline-delimited JSON, errors in the X-Stream-Error trailer. */
  streamChannels: boolean;
  format: 'unixfs' | 'car';
  noPin: boolean;
  layout: '' | 'balanced' | 'trickle';
  chunker: string;
  rawLeaves: boolean;
  progress: boolean;
  cidVersion: number;
  hashFun: string;
  /** Query name `nocopy` (not `no-copy`). */
  noCopy: boolean;
}

/** The first characters go-multibase (v0.3.0) Decode knows; any other is "selected encoding not supported". */
const MULTIBASE_PREFIXES = new Set([...'\u00000fFbBvVcCtTkKzZMUmu', '\u{1F680}']);

/**
 * Go's cid.Decode (go-cid), via multiformats (base58btc CIDv0, base32/base58/base36 CIDv1). Its checks
 * before the bytes are decoded come with go-cid's messages, so a malformed CID is refused in the real
 * server's words; past them, multiformats' own message follows the same "invalid cid: " prefix.
 */
export function decodeCid(s: string): CID {
  const bytes = Buffer.byteLength(s);
  if (bytes < 2) throw new ParamError('invalid cid: cid too short');
  // Only a 46-byte "Qm…" string is a base58 CIDv0; anything else must start with a multibase prefix.
  const v0 = bytes === 46 && s.startsWith('Qm');
  if (!v0 && !MULTIBASE_PREFIXES.has(String.fromCodePoint(s.codePointAt(0)!))) {
    throw new ParamError('invalid cid: selected encoding not supported');
  }
  try {
    return CID.parse(s);
  } catch (err) {
    throw new ParamError(`invalid cid: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** An IPFS path as boxo's path.NewPath takes it apart: /ipfs|ipld/{cid}[/…] or /ipns/{name}[/…]. */
export interface IpfsPath {
  /** The cleaned path, e.g. /ipfs/Qm…/a/b. */
  path: string;
  namespace: 'ipfs' | 'ipld' | 'ipns';
  /** The root CID, for the immutable namespaces. */
  root?: CID;
  /** What follows the root: the links to walk from it. */
  rest: string[];
}

/** boxo/path NewPath (v0.39.0), with its messages: `invalid path "<str>": <why>`. */
export function parseIpfsPath(str: string): IpfsPath {
  const invalid = (why: string) => new ParamError(`invalid path ${JSON.stringify(str)}: ${why}`);
  // StringToSegments: path.Clean, then no empty segments.
  const cleaned = posix.normalize(str === '' ? '.' : str).replace(/^\/+|\/+$/g, '');
  const segments = cleaned === '' || cleaned === '.' ? [] : cleaned.split('/');
  if (!str.startsWith('/') || segments.length < 2 || segments[1] === '') {
    throw invalid('path does not have enough components');
  }
  const [namespace, name, ...rest] = segments as [string, string, ...string[]];
  const path = `/${segments.join('/')}`;
  if (namespace === 'ipns') return { path, namespace, rest };
  if (namespace !== 'ipfs' && namespace !== 'ipld') throw invalid(`unknown namespace: ${JSON.stringify(namespace)}`);
  let root: CID;
  try {
    root = decodeCid(name);
  } catch (err) {
    throw invalid((err as Error).message);
  }
  return { path, namespace, root, rest };
}

function boolParam(q: GoQuery, name: string, dflt: boolean): boolean {
  const v = q.get(name);
  if (v === '') return dflt;
  const b = parseGoBool(v);
  if (b === undefined) throw new ParamError(`parameter ${name} invalid`);
  return b;
}

function intParam(q: GoQuery, name: string, dflt: number, value = q.get(name)): number {
  const v = value;
  if (v === '') return dflt;
  const n = parseGoInt(v);
  if (n === undefined) throw new ParamError(`parameter ${name} invalid`);
  return n;
}

/** PinOptions.FromQuery (api/types.go), same order and messages. */
export function pinOptionsFromQuery(q: GoQuery): PinOptions {
  const mode = q.get('mode') === 'direct' ? 'direct' : 'recursive'; // unknown -> recursive
  // `replication` overrides both replication-min and replication-max.
  const rpl = q.get('replication');
  const rplMin = intParam(q, 'replication-min', 0, rpl || q.get('replication-min'));
  const rplMax = intParam(q, 'replication-max', 0, rpl || q.get('replication-max'));

  let shardSize = 0;
  const shardStr = q.get('shard-size');
  if (shardStr !== '') {
    if (!/^[0-9]+$/.test(shardStr)) throw new ParamError('parameter shard_size is invalid');
    shardSize = Number(shardStr);
  }

  const allocs = q.get('user-allocations');

  // expire-at (RFC 3339) wins over expire-in (Go duration, at least 1s).
  let expireAt: number | null = null;
  const at = q.get('expire-at');
  const inStr = q.get('expire-in');
  if (at !== '') {
    const t = Date.parse(at);
    if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(at) || Number.isNaN(t)) {
      throw new ParamError(`expire-at cannot be parsed: parsing time ${JSON.stringify(at)} as RFC 3339 failed`);
    }
    expireAt = t;
  } else if (inStr !== '') {
    let ns: bigint;
    try {
      ns = parseDuration(inStr); // Go's time.ParseDuration, same messages
    } catch (err) {
      throw new ParamError(`expire-in cannot be parsed: ${(err as Error).message}`);
    }
    if (ns < 1_000_000_000n) throw new ParamError('expire-in duration too short');
    expireAt = Date.now() + Number(ns / 1_000_000n);
  }

  // meta-<key>=<value> query parameters become metadata.
  const metadata: Record<string, string> = {};
  for (const key of q.keys()) {
    if (key.startsWith('meta-') && key.length > 'meta-'.length) metadata[key.slice(5)] = q.get(key);
  }

  let pinUpdate: string | null = null;
  const upd = q.get('pin-update');
  if (upd !== '') {
    try {
      pinUpdate = decodeCid(upd).toString();
    } catch (err) {
      throw new ParamError(`error decoding update option parameter: ${(err as Error).message}`);
    }
  }

  const originsStr = q.get('origins');
  return {
    replicationFactorMin: rplMin,
    replicationFactorMax: rplMax,
    name: q.get('name'),
    mode,
    shardSize,
    userAllocations: allocs !== '' ? allocs.split(',') : null,
    expireAt,
    metadata,
    pinUpdate,
    origins: originsStr !== '' ? originsStr.split(',') : null,
  };
}

/** AddParamsFromQuery (api/add.go), with DefaultAddParams' defaults. */
export function addParamsFromQuery(q: GoQuery): AddParams {
  const pin = pinOptionsFromQuery(q);
  pin.pinUpdate = null; // hardcoded: pin-update makes no sense when adding
  const layout = q.get('layout');
  if (layout !== '' && layout !== 'balanced' && layout !== 'trickle') {
    throw new ParamError('layout parameter is invalid');
  }
  const chunker = q.get('chunker') || 'size-262144';
  const hashFun = q.get('hash') || 'sha2-256';
  const format = q.get('format');
  if (format !== '' && format !== 'unixfs' && format !== 'car') {
    throw new ParamError('format parameter is invalid');
  }
  const local = boolParam(q, 'local', false);
  const recursive = boolParam(q, 'recursive', false);
  const hidden = boolParam(q, 'hidden', false);
  const wrap = boolParam(q, 'wrap-with-directory', false);
  const shard = boolParam(q, 'shard', false);
  const progress = boolParam(q, 'progress', false);
  const cidVersion = intParam(q, 'cid-version', 0);
  // "This mimics go-ipfs behavior": CIDv1 implies raw leaves unless raw-leaves is given.
  const rawLeaves = boolParam(q, 'raw-leaves', cidVersion > 0);
  const streamChannels = boolParam(q, 'stream-channels', true);
  const noCopy = boolParam(q, 'nocopy', false);
  const noPin = boolParam(q, 'no-pin', false);
  return {
    pin,
    local,
    recursive,
    hidden,
    wrap,
    shard,
    streamChannels,
    format: format === 'car' ? 'car' : 'unixfs',
    noPin,
    layout,
    chunker,
    rawLeaves,
    progress,
    cidVersion,
    hashFun,
    noCopy,
  };
}
