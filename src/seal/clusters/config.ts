import { isIP } from 'node:net';
import { isDeepStrictEqual } from 'node:util';
import { DurationError, parseDuration } from '../../kernel/duration.ts';
import { badRequest } from '../../kernel/errors.ts';
import type { AddParams, ClusterConfigBody, PinParams } from './schemas.ts';

/** The defaults of docs/specification.md#ipfs-cluster-configuration. */
export const DEFAULT_PORT = '9094';
export const DEFAULT_SECURE = true;
export const DEFAULT_TIMEOUT = '30s';
/** A pinParams.expireIn below 60s is ignored (docs/specification.md#ipfs-cluster-configuration). */
const MIN_EXPIRE_IN_NS = 60n * 1_000_000_000n;

/**
 * Bound on `name` once URL-encoded (a non-ASCII character takes up to 12 bytes): the name rides in the
 * query of /add and POST /pins, and the REST API refuses more than about 8 KiB of request line and headers.
 */
const MAX_ENCODED_NAME = 2048;

/**
 * The range of a cluster's `timeout`. Below 100 ms no exchange with a cluster over a network completes
 * (`1ns` would be a 1 ms limit on every call); above 10 min a hung cluster holds a seal longer than any
 * client waits, and Node's timers cap at about 24.8 days anyway.
 */
const MIN_TIMEOUT_NS = 100n * 1_000_000n;
const MAX_TIMEOUT_NS = 10n * 60n * 1_000_000_000n;

/** C0 controls (NUL, CR, LF, TAB ...), DEL and C1 controls: no setting the cluster reads carries them. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * The replication pair as the cluster server judges it at every pin (cluster.go setupReplicationFactor
 * and isReplicationFactorValid): 0 or a missing side takes the cluster's default, -1 (everywhere) in a
 * default configuration; then either both sides are -1 or neither is, and min may not exceed max.
 * Refused here, at configuration time, instead of on every seal.
 */
export function replicationProblem(pinParams: PinParams | undefined): string | undefined {
  const min = pinParams?.replicationFactorMin;
  const max = pinParams?.replicationFactorMax;
  if (min === undefined && max === undefined) return undefined;
  const effective = (value: number | undefined) => (value === undefined || value === 0 ? -1 : value);
  const [effMin, effMax] = [effective(min), effective(max)];
  const shown = (value: number | undefined, eff: number) =>
    value === undefined
      ? `unset (the cluster default, ${eff})`
      : value === 0
        ? `0 (the cluster default, ${eff})`
        : String(value);
  if ((effMin === -1) !== (effMax === -1)) {
    return (
      `replicationFactorMin ${shown(min, effMin)} and replicationFactorMax ${shown(max, effMax)}: the cluster ` +
      'refuses a pair where exactly one side is -1 (pin everywhere); give both as -1, or both as peer counts'
    );
  }
  if (effMax > 0 && effMin > effMax) return `replicationFactorMin ${min} is larger than replicationFactorMax ${max}`;
  return undefined;
}

/** One cluster with the defaults applied and the password in clear: what the client works with. */
export interface ClusterSettings {
  host: string;
  port: string;
  user?: string;
  pass?: string;
  secure: boolean;
  timeout: string;
  addParams?: AddParams;
  pinParams?: PinParams;
  /** The IPFS API (the peer's proxy) reads go to, `http://host:port`; unset: the host on IPFS_PROXY_PORT. */
  ipfsApi?: string;
}

/** Where the configuration in force came from. */
export type ConfigSource = 'stored' | 'environment';

/** `host:port`, the name a cluster goes by in pin records and messages (`[::1]:9094` for IPv6). */
export function clusterName(cluster: Pick<ClusterSettings, 'host' | 'port'>): string {
  return `${isIP(cluster.host) === 6 ? `[${cluster.host}]` : cluster.host}:${cluster.port}`;
}

/**
 * A host name (letters, digits, hyphens and - for Docker service names - underscores, dot-separated)
 * or an IP address (IPv6 with or without brackets). Returns the host without brackets, or undefined.
 */
export function parseHost(raw: string): string | undefined {
  const host = /^\[.*\]$/.test(raw) ? raw.slice(1, -1) : raw;
  if (isIP(host) !== 0) return host;
  if (host.length > 253) return undefined;
  const label = /^[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$/;
  const labels = host.replace(/\.$/, '').split('.');
  // An all-numeric dotted name that is not an IP (e.g. 300.1.2.3) is a typo, not a host name.
  if (labels.every((part) => /^\d+$/.test(part))) return undefined;
  return labels.every((part) => label.test(part)) ? host : undefined;
}

function durationNs(text: string): bigint | undefined {
  try {
    return parseDuration(text);
  } catch (error) {
    if (error instanceof DurationError) return undefined;
    throw error;
  }
}

/** The cluster's time limit in milliseconds (validated positive when stored or read from the environment). */
export function timeoutMs(cluster: ClusterSettings): number {
  const ns = durationNs(cluster.timeout) ?? 30_000_000_000n;
  // A configuration stored before the range was checked is held to it here too.
  const clamped = ns < MIN_TIMEOUT_NS ? MIN_TIMEOUT_NS : ns > MAX_TIMEOUT_NS ? MAX_TIMEOUT_NS : ns;
  return Number(clamped / 1_000_000n);
}

/**
 * An IPFS API address as `http://host:port` (or https), or a sentence saying what is wrong with it
 * (`what` names the field or variable). Only scheme, host and port: the client adds `/api/v0/...` itself.
 */
export function parseIpfsApi(raw: string, what: string): { url: string } | { problem: string } {
  const problem = (why: string) => ({
    problem: `${what} ${JSON.stringify(raw)} ${why} (give it as http://host:port, e.g. http://10.0.0.5:9095)`,
  });
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return problem('is not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return problem('is not an http or https URL');
  if (url.username || url.password) return problem('carries credentials, which belong in user and pass');
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash) {
    return problem('has a path, query or fragment');
  }
  if (!parseHost(url.hostname)) return problem('has no valid host');
  return { url: url.origin };
}

/** The IPFS API a cluster is read through: its own `ipfsApi`, else its host on IPFS_PROXY_PORT. */
export function ipfsApiOf(cluster: ClusterSettings, proxyPort: number): URL {
  const host = isIP(cluster.host) === 6 ? `[${cluster.host}]` : cluster.host;
  return new URL(cluster.ipfsApi ?? `http://${host}:${proxyPort}`);
}

/** The first string field of a cluster entry holding a control character, as `[path, value]`. */
function controlCharacterField(input: unknown, path = ''): [string, string] | undefined {
  if (typeof input === 'string') return CONTROL.test(input) ? [path, input] : undefined;
  if (input === null || typeof input !== 'object') return undefined;
  for (const [key, value] of Object.entries(input)) {
    const found = controlCharacterField(value, path ? `${path}.${key}` : key);
    if (found) return found;
  }
  return undefined;
}

/**
 * The `expire-in` value to send for a cluster, or undefined: only a valid duration string of at least 60s is
 * sent; anything else means the pin never expires (docs/specification.md#ipfs-cluster-configuration).
 */
export function expireInToSend(pinParams: PinParams | undefined): string | undefined {
  const text = pinParams?.expireIn;
  if (text === undefined) return undefined;
  const ns = durationNs(text);
  return ns !== undefined && ns >= MIN_EXPIRE_IN_NS ? text : undefined;
}

/**
 * Checks what the JSON schema cannot and applies the defaults. Every problem is a 400 whose message
 * names the field the way the client wrote it (`clusters[1].timeout`).
 */
export function normalizeClusters(body: ClusterConfigBody): ClusterSettings[] {
  const seen = new Map<string, number>();
  return body.clusters.map((input, index) => {
    const field = (name: string) => `clusters[${index}].${name}`;
    const control = controlCharacterField(input);
    if (control) {
      const [name, value] = control;
      const code = value.codePointAt(value.search(CONTROL))!;
      // The value itself is not echoed: it may be the password.
      throw badRequest(
        `${field(name)} contains the control character U+${code.toString(16).toUpperCase().padStart(4, '0')}; ` +
          'no setting takes control characters (CR, LF, NUL, tab or any other C0 or C1 control)',
      );
    }
    const host = parseHost(input.host);
    if (!host) {
      throw badRequest(
        `${field('host')} ${JSON.stringify(input.host)} is not a host ` +
          'name or IP address (give it without scheme, port or path)',
      );
    }
    let port = DEFAULT_PORT;
    if (input.port !== undefined) {
      const text = String(input.port).trim();
      const value = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
      if (!(value >= 1 && value <= 65535)) {
        throw badRequest(`${field('port')} ${JSON.stringify(input.port)} is not a port number from 1 to 65535`);
      }
      port = String(value);
    }
    if ((input.user === undefined) !== (input.pass === undefined)) {
      throw badRequest(
        `${field(input.user === undefined ? 'user' : 'pass')} is required ` +
          `when ${field(input.user === undefined ? 'pass' : 'user')} is given (Basic auth needs both)`,
      );
    }
    const timeout = input.timeout ?? DEFAULT_TIMEOUT;
    const ns = durationNs(timeout);
    if (ns === undefined || ns <= 0n) {
      throw badRequest(
        `${field('timeout')} ${JSON.stringify(timeout)} is not a duration string above zero (e.g. 30s, 1m30s, 500ms)`,
      );
    }
    if (ns < MIN_TIMEOUT_NS || ns > MAX_TIMEOUT_NS) {
      throw badRequest(
        `${field('timeout')} ${JSON.stringify(timeout)} is ${ns < MIN_TIMEOUT_NS ? 'below 100ms' : 'above 10m'}; ` +
          'a time limit for a cluster is taken from 100ms to 10m',
      );
    }
    let ipfsApi: string | undefined;
    if (input.ipfsApi !== undefined) {
      const parsed = parseIpfsApi(input.ipfsApi, field('ipfsApi'));
      if ('problem' in parsed) throw badRequest(parsed.problem);
      ipfsApi = parsed.url;
    }
    if (input.user?.includes(':')) {
      // Go's (*Request).BasicAuth splits the credentials at the first colon: such a user never logs in.
      throw badRequest(
        `${field('user')} contains ':', which Basic auth cannot carry in a user name ` +
          "(the cluster splits user and password at the first ':')",
      );
    }
    if (input.addParams?.shard === true) {
      throw badRequest(
        `${field('addParams.shard')} true is not supported: the cluster refuses a sharded /add without a shard size, ` +
          'and a sealed message is one encrypted file read back by its own CID; leave shard out or false',
      );
    }
    const pinParams = input.pinParams;
    const replication = replicationProblem(pinParams);
    if (replication) throw badRequest(`${field('pinParams')}.${replication}`);
    if (
      pinParams?.name !== undefined &&
      new URLSearchParams({ name: pinParams.name }).toString().length - 5 > MAX_ENCODED_NAME
    ) {
      throw badRequest(
        `${field('pinParams.name')} takes ${new URLSearchParams({ name: pinParams.name }).toString().length - 5} ` +
          `bytes URL-encoded; at most ${MAX_ENCODED_NAME} fit, since the name travels in the query of every /add ` +
          "and pin and the cluster's REST API refuses requests with more than about 8 KiB of request line and headers",
      );
    }
    const cluster: ClusterSettings = {
      host,
      port,
      ...(input.user !== undefined ? { user: input.user, pass: input.pass } : {}),
      secure: input.secure ?? DEFAULT_SECURE,
      timeout,
      ...(input.addParams && Object.keys(input.addParams).length > 0 ? { addParams: { ...input.addParams } } : {}),
      ...(pinParams && Object.keys(pinParams).length > 0 ? { pinParams: { ...pinParams } } : {}),
      ...(ipfsApi !== undefined ? { ipfsApi } : {}),
    };
    const name = clusterName(cluster);
    const earlier = seen.get(name);
    if (earlier !== undefined)
      throw badRequest(`clusters[${index}] repeats clusters[${earlier}] (${name}); list each cluster once`);
    seen.set(name, index);
    return cluster;
  });
}

/** The IPFS_CLUSTER_* fallback as one cluster; the variables were parsed by the kernel config. */
export function environmentCluster(env: {
  host: string;
  port: string;
  user?: string;
  pass?: string;
  secure: boolean;
  /** IPFS_PROXY_URL, already checked by the kernel config. */
  ipfsApi?: string;
}): ClusterSettings {
  const host = parseHost(env.host);
  if (!host) {
    throw new Error(
      `IPFS_CLUSTER_HOST=${JSON.stringify(env.host)} is not valid: ` +
        'expected a host name or IP address without scheme, port or path',
    );
  }
  return {
    host,
    port: env.port,
    ...(env.user !== undefined && env.pass !== undefined ? { user: env.user, pass: env.pass } : {}),
    secure: env.secure,
    timeout: DEFAULT_TIMEOUT,
    ...(env.ipfsApi !== undefined ? { ipfsApi: env.ipfsApi } : {}),
  };
}

/** What the API shows: the password replaced, never echoed. */
export function redactCluster(cluster: ClusterSettings) {
  const { pass, ...rest } = cluster;
  return pass === undefined ? rest : { ...rest, pass: '[redacted]' as const };
}

export function sameClusters(a: ClusterSettings[], b: ClusterSettings[]): boolean {
  return isDeepStrictEqual(JSON.parse(JSON.stringify(a)), JSON.parse(JSON.stringify(b)));
}
