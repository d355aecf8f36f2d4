import { AUTH_PORT, AUTH_PUBLIC_URL, authPublicUrl, SEAL_MAX_MESSAGE_SIZE, SEAL_PORT } from '../contracts/variables.ts';
import type { ServiceConfigInput } from '../kernel/config.ts';
import {
  boolean,
  integer,
  nonEmpty,
  nonNegativeDuration,
  port,
  positiveDuration,
  text,
  ValueError,
} from '../kernel/parsers.ts';
import { parseSealExpiry } from '../kernel/seal-expiry.ts';
import { weakKeyProblem } from '../kernel/secret-strength.ts';
import { defineVariables, loadVariables } from '../kernel/variables.ts';
import { parseIpfsApi } from './clusters/config.ts';

/** A message's life as X-Sealpost-Expires gives one (`7d`, `72h`, `1d12h`), in milliseconds; no time of day. */
const life = {
  parse(raw: string): number {
    let parsed: ReturnType<typeof parseSealExpiry>;
    try {
      parsed = parseSealExpiry(raw);
    } catch {
      throw new ValueError();
    }
    if (!('lifeMs' in parsed)) throw new ValueError();
    return parsed.lifeMs;
  },
  expected: 'a positive life such as 30d, 72h or 1d12h',
};

/** The seal service's variables (docs/configuration.md, component B), in the order the reference lists them. */
export const SEAL_VARIABLES = defineVariables({
  port: SEAL_PORT,
  envCluster: {
    host: {
      name: 'IPFS_CLUSTER_HOST',
      meaning: 'fallback cluster host (used only when no configuration was stored through POST /v1/ipfs/config)',
      ...nonEmpty('a host name or IP address'),
    },
    port: {
      name: 'IPFS_CLUSTER_PORT',
      meaning:
        'fallback cluster port; on the embedded default (`start all` with no IPFS_CLUSTER_HOST), the port the ' +
        "IPFS Cluster stand-in's REST API listens on",
      default: '9094',
      parse: (raw: string) => String(port(1).parse(raw)),
      expected: port(1).expected,
    },
    user: { name: 'IPFS_CLUSTER_USER', meaning: 'fallback cluster user (Basic auth)', ...text('a user name') },
    pass: {
      name: 'IPFS_CLUSTER_PASS',
      meaning: 'fallback cluster password (Basic auth)',
      secret: true,
      ...text('a password'),
    },
    secure: { name: 'IPFS_CLUSTER_SECURE', meaning: 'fallback use of HTTPS', default: 'true', ...boolean },
  },
  ipfsProxyPort: {
    name: 'IPFS_PROXY_PORT',
    meaning:
      "port of the IPFS HTTP API proxied by each cluster peer (reading content), on the cluster's host, for a " +
      "cluster without its own ipfsApi; on the embedded default, the stand-in's IPFS proxy listens on it",
    default: '9095',
    ...port(1),
  },
  ipfsProxyUrl: {
    name: 'IPFS_PROXY_URL',
    meaning:
      'IPFS API (proxy) of the fallback cluster as http://host:port, where reads and the scrub go; ' +
      'unset: IPFS_CLUSTER_HOST on IPFS_PROXY_PORT (the ipfsApi of a stored cluster configuration)',
    parse: (raw: string) => {
      const parsed = parseIpfsApi(raw, 'IPFS_PROXY_URL');
      if ('problem' in parsed) throw new ValueError();
      return parsed.url;
    },
    expected: 'an http:// or https:// URL with host and port only, e.g. http://10.0.0.5:9095',
  },
  masterKey: {
    name: 'SEAL_MASTER_KEY',
    meaning:
      'key that wraps message keys and stored cluster passwords: 32 bytes as 64 hex ' +
      'digits or base64; generated into the data folder when unset outside production; production refuses ' +
      'a key of one byte repeated (`openssl rand -hex 32`)',
    secret: true,
    parse: masterKey,
    expected: '32 bytes as 64 hex digits or as base64',
  },
  masterKeys: {
    name: 'SEAL_MASTER_KEYS',
    meaning:
      'further master key versions as comma-separated `version:key` pairs (e.g. `2:<64 hex digits>`), beside ' +
      'SEAL_MASTER_KEY (version 1): the current version wraps, the others only unwrap until a rotation ' +
      '(`sealpost keys rotate`) has re-wrapped what they wrapped',
    secret: true,
    parse: versionedKeys,
    expected:
      'comma-separated version:key pairs, each version 1 to 9999 once, each key 32 bytes as 64 hex digits or base64',
  },
  masterKeyVersion: {
    name: 'SEAL_MASTER_KEY_VERSION',
    meaning:
      'the key version that wraps new message keys and stored passwords; unset: the highest configured ' +
      '(set it to the old version while a new one is added on every instance, so that none wraps with a ' +
      'version another instance cannot unwrap yet)',
    ...integer(1, 9999),
  },
  keyPkcs11: {
    module: {
      name: 'SEAL_KEY_PKCS11_MODULE',
      meaning:
        'PKCS#11 library of the hardware security module holding key versions (e.g. ' +
        '/usr/lib/softhsm/libsofthsm2.so): its keys wrap and unwrap inside the token and never leave it',
      ...nonEmpty('a file path'),
    },
    slot: {
      name: 'SEAL_KEY_PKCS11_SLOT',
      meaning: "the token's slot id, or the token's label",
      ...nonEmpty('a slot id or a token label'),
    },
    pinFile: {
      name: 'SEAL_KEY_PKCS11_PIN_FILE',
      meaning: "file holding the token's user PIN (mode 0600)",
      ...nonEmpty('a file path'),
    },
    keys: {
      name: 'SEAL_KEY_PKCS11_KEYS',
      meaning:
        'key versions held by the token as comma-separated `version:label` pairs, each label that of an ' +
        'AES-256 secret key (CKA_LABEL) usable for encrypt and decrypt (AES-GCM)',
      parse: versionedLabels,
      expected: 'comma-separated version:label pairs, each version 1 to 9999 once',
    },
  },
  clusterCaFile: {
    name: 'IPFS_CLUSTER_CA_FILE',
    meaning:
      'PEM file of extra certificate authorities trusted for HTTPS to the clusters ' +
      '(e.g. a self-signed cluster certificate), beside the public roots',
    ...nonEmpty('a file path'),
  },
  maxMessageSize: SEAL_MAX_MESSAGE_SIZE,
  repinInterval: {
    name: 'SEAL_REPIN_INTERVAL',
    meaning:
      'first delay before a pin in error (refused, unreachable, ' +
      'or failed in IPFS) is pinned again; then doubling up to 1h',
    default: '1m',
    ...positiveDuration,
  },
  pinCheckInterval: {
    name: 'SEAL_PIN_CHECK_INTERVAL',
    meaning:
      'how often a pin a cluster accepted but does not hold yet (`pinning`) is looked at again (GET /pins/{cid})',
    default: '5s',
    ...positiveDuration,
  },
  pinDeadline: {
    name: 'SEAL_PIN_DEADLINE',
    meaning:
      'a sealed message not pinned on every cluster this long after ' +
      'sealing is logged as an error and counted in seal_pins_overdue',
    default: '10m',
    ...positiveDuration,
  },
  defaultExpiry: {
    name: 'SEAL_DEFAULT_EXPIRY',
    meaning:
      'life of a sealed message whose sender gave no X-Sealpost-Expires (7d, 72h, 1d12h); at its end the ' +
      'message key is destroyed and the clusters unpin the content; unset: messages do not end by themselves',
    ...life,
  },
  maxExpiry: {
    name: 'SEAL_MAX_EXPIRY',
    meaning:
      'longest life of a sealed message, from sealing: caps X-Sealpost-Expires and SEAL_DEFAULT_EXPIRY, and ' +
      'gives every message an end date when set; unset: no cap',
    ...life,
  },
  endInterval: {
    name: 'SEAL_END_INTERVAL',
    meaning:
      'how often ended messages are looked for: expired ones get their key destroyed, and clusters are ' +
      'asked to unpin ended content (failed unpins retried, doubling up to 1h); expiry itself holds at once',
    default: '10s',
    ...positiveDuration,
  },
  scrubInterval: {
    name: 'SEAL_SCRUB_INTERVAL',
    meaning:
      "how often the scrub reads every running sealed message's copy on every cluster and checks it against its " +
      'seal (first one interval after sealing); damaged or missing copies are listed in GET /v1/admin/copies; ' +
      '0s turns the scrub off',
    default: '168h',
    ...nonNegativeDuration,
  },
  scrubRate: {
    name: 'SEAL_SCRUB_RATE',
    meaning:
      'messages the scrub reads per second at most (each on every cluster, one at a time), so that it never ' +
      'competes with sealing and reading',
    default: '2',
    ...integer(1, 1000),
  },
  keyRewrapRate: {
    name: 'SEAL_KEY_REWRAP_RATE',
    meaning:
      'message keys a key rotation (`sealpost keys rotate`) re-wraps per second at most, across instances (one ' +
      'instance does it at a time), so that it never competes with sealing and reading',
    default: '50',
    ...integer(1, 10000),
  },
  trailRetention: {
    name: 'SEAL_TRAIL_RETENTION',
    meaning:
      "age at which a sealed message's trail entries are deleted (10 years, as the status history); " +
      'the trail outlives the content',
    default: '87600h',
    ...positiveDuration,
  },
  // The reader links it hands out point at the auth service.
  publicUrl: AUTH_PUBLIC_URL,
  authPort: AUTH_PORT,
});

/** The seal service's configuration, durations in milliseconds; problems go to input.problems. */
export function loadSealConfig(input: ServiceConfigInput) {
  const { problems } = input;
  const { authPort, envCluster, ipfsProxyUrl, keyPkcs11, ...values } = loadVariables(
    SEAL_VARIABLES,
    input.env,
    problems,
  );
  problems.push(...keyVersionProblems(values, keyPkcs11));
  const user = envCluster.user || undefined;
  const pass = envCluster.pass || undefined;
  if (envCluster.host && Boolean(user) !== Boolean(pass)) {
    problems.push('IPFS_CLUSTER_USER and IPFS_CLUSTER_PASS must be set together (Basic auth needs both)');
  }
  if (input.shared.production) {
    const keys: Array<[string, Buffer]> = [
      ...(values.masterKey ? [['SEAL_MASTER_KEY', values.masterKey] as [string, Buffer]] : []),
      ...[...(values.masterKeys ?? [])].map(([version, key]): [string, Buffer] => [
        `SEAL_MASTER_KEYS version ${version}`,
        key,
      ]),
    ];
    for (const [name, key] of keys) {
      const problem = weakKeyProblem(name, key);
      if (problem) problems.push(problem);
    }
    // A version that repeats another's key is no rotation: what it re-wraps is still readable with the old one.
    for (const [index, [name, key]] of keys.entries()) {
      const first = keys.findIndex(([, other]) => other.equals(key));
      if (first < index) problems.push(`${name} is the same key as ${keys[first]![0]}: each version needs its own key`);
    }
  }
  return {
    ...values,
    /** The IPFS_CLUSTER_* fallback; undefined when IPFS_CLUSTER_HOST is unset. */
    envCluster: envCluster.host
      ? {
          host: envCluster.host,
          port: envCluster.port,
          ...(user ? { user } : {}),
          ...(pass ? { pass } : {}),
          secure: envCluster.secure,
          ...(ipfsProxyUrl ? { ipfsApi: ipfsProxyUrl } : {}),
        }
      : undefined,
    /** IPFS_CLUSTER_PORT (or its default) even without IPFS_CLUSTER_HOST: the embedded stand-in's REST API port. */
    clusterPort: Number(envCluster.port),
    /** SEAL_KEY_PKCS11_*: the HSM key versions; undefined when SEAL_KEY_PKCS11_MODULE is unset. */
    keyPkcs11:
      keyPkcs11.module && keyPkcs11.slot && keyPkcs11.pinFile && keyPkcs11.keys
        ? { module: keyPkcs11.module, slot: keyPkcs11.slot, pinFile: keyPkcs11.pinFile, keys: keyPkcs11.keys }
        : undefined,
    /** AUTH_PUBLIC_URL: reader links are `{publicUrl}/m/{id}`. */
    publicUrl: authPublicUrl(values.publicUrl, authPort, input),
  };
}

export type SealConfig = ReturnType<typeof loadSealConfig>;

function masterKey(raw: string): Buffer {
  const value = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  if (value.length !== 32) throw new ValueError();
  return value;
}

/** `2:<key>,3:<key>`: key versions given in the environment. */
function versionedKeys(raw: string): Map<number, Buffer> {
  const pairs = versionPairs(raw);
  return new Map([...pairs].map(([version, key]) => [version, masterKey(key)]));
}

/** `2:sealpost-2,3:sealpost-3`: key versions held by the PKCS#11 token, by label. */
function versionedLabels(raw: string): Map<number, string> {
  return versionPairs(raw);
}

function versionPairs(raw: string): Map<number, string> {
  const pairs = new Map<number, string>();
  for (const item of raw.split(',')) {
    const match = /^\s*([1-9][0-9]{0,3})\s*:\s*(\S.*?)\s*$/.exec(item);
    if (!match || pairs.has(Number(match[1]))) throw new ValueError();
    pairs.set(Number(match[1]), match[2]!);
  }
  return pairs;
}

/** What does not fit together across the key variables; each sentence names the variables to fix. */
function keyVersionProblems(
  values: { masterKey?: Buffer; masterKeys?: Map<number, Buffer>; masterKeyVersion?: number },
  pkcs11: { module?: string; slot?: string; pinFile?: string; keys?: Map<number, string> },
): string[] {
  const problems: string[] = [];
  if (values.masterKey && values.masterKeys?.has(1)) {
    problems.push('SEAL_MASTER_KEYS gives version 1, which SEAL_MASTER_KEY is: give version 1 in one of them only');
  }
  if (pkcs11.module) {
    for (const [name, value] of [
      ['SEAL_KEY_PKCS11_SLOT', pkcs11.slot],
      ['SEAL_KEY_PKCS11_PIN_FILE', pkcs11.pinFile],
      ['SEAL_KEY_PKCS11_KEYS', pkcs11.keys],
    ] as const) {
      if (!value) problems.push(`${name} is not set: SEAL_KEY_PKCS11_MODULE needs it`);
    }
  } else if (pkcs11.keys || pkcs11.slot || pkcs11.pinFile) {
    problems.push('SEAL_KEY_PKCS11_MODULE is not set: SEAL_KEY_PKCS11_SLOT, _PIN_FILE and _KEYS need the library');
  }
  const inEnvironment = new Set([...(values.masterKey ? [1] : []), ...(values.masterKeys?.keys() ?? [])]);
  for (const version of pkcs11.module ? (pkcs11.keys?.keys() ?? []) : []) {
    if (inEnvironment.has(version)) {
      problems.push(
        `SEAL_KEY_PKCS11_KEYS gives version ${version}, which SEAL_MASTER_KEY(S) gives too: one key a version`,
      );
    }
  }
  return problems;
}
