/**
 * The stand-in's persistent state besides blocks: its peer identity and its
 * pinset, as JSON files in the data dir (written atomically via rename).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { base58btc } from 'multiformats/bases/base58';
import { GO_ZERO_TIME, goTime } from './go-compat.ts';
import type { PinOptions } from './params.ts';

/**
 * A pin as the REST API prints it: the JSON of api.Pin (ipfs-cluster
 * api/types.go), which embeds PinOptions, in Go's field order.
 */
export interface ClusterPin {
  replication_factor_min: number;
  replication_factor_max: number;
  name: string;
  mode: 'recursive' | 'direct';
  shard_size: number;
  user_allocations: string[] | null;
  expire_at: string;
  /** null once stored when empty (see storedPin). */
  metadata: Record<string, string> | null;
  pin_update: string | null;
  origins: string[] | null;
  cid: string;
  type: 'pin';
  allocations: string[];
  max_depth: number;
  reference: string | null;
  timestamp: string;
}

/** The brief's name for what `pins()` returns: one api.Pin per pinned CID. */
export type PinInfo = ClusterPin;

export interface Identity {
  /** Cluster peer ID (an Ed25519 libp2p peer ID, "12D3KooW..."). */
  id: string;
  /** Peer ID of the (imaginary) IPFS daemon behind the cluster peer. */
  ipfsId: string;
}

/** An Ed25519 libp2p peer ID: identity multihash of the protobuf public key. */
function newPeerId(): string {
  const key = randomBytes(32);
  // multihash identity (0x00), length 36; PublicKey{Type: Ed25519 (1), Data: 32 bytes}
  const bytes = Buffer.concat([Buffer.from([0x00, 0x24, 0x08, 0x01, 0x12, 0x20]), key]);
  return base58btc.baseEncode(bytes);
}

async function readJson<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

async function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(tmp, JSON.stringify(value, null, 1));
  await rename(tmp, file);
}

export async function loadIdentity(dataDir: string): Promise<Identity> {
  await mkdir(dataDir, { recursive: true });
  const file = join(dataDir, 'identity.json');
  const existing = await readJson<Identity>(file);
  if (existing) return existing;
  const identity = { id: newPeerId(), ipfsId: newPeerId() };
  await writeJsonAtomic(file, identity);
  return identity;
}

/** Builds the api.Pin the cluster would store for `cid` with these options. */
export function makePin(cid: string, opts: PinOptions, self: string): ClusterPin {
  // Cluster.setupReplicationFactor: 0 means the cluster default, which is -1
  // (pin everywhere) in the default service.json; pin-everywhere pins carry
  // no allocations. A one-peer cluster allocates itself otherwise.
  const min = opts.replicationFactorMin === 0 ? -1 : opts.replicationFactorMin;
  const max = opts.replicationFactorMax === 0 ? -1 : opts.replicationFactorMax;
  return {
    replication_factor_min: min,
    replication_factor_max: max,
    name: opts.name,
    mode: opts.mode,
    shard_size: opts.shardSize,
    user_allocations: opts.userAllocations,
    expire_at: opts.expireAt === null ? GO_ZERO_TIME : goTime(opts.expireAt),
    metadata: opts.metadata,
    pin_update: opts.pinUpdate,
    origins: opts.origins,
    cid,
    type: 'pin',
    allocations: min === -1 && max === -1 ? [] : [self],
    // ParseCidOrFail (api/common/api.go): "For now, all pins are recursive".
    max_depth: -1,
    reference: null,
    timestamp: goTime(Date.now()),
  };
}

/** A JSON time cut to whole seconds, as time.Unix(seconds, 0) prints it. */
function wholeSeconds(time: string): string {
  return time === GO_ZERO_TIME ? time : goTime(Math.floor(Date.parse(time) / 1000) * 1000);
}

/**
 * The pin as the pinset gives it back. The real cluster keeps api.Pin as protobuf (api/types.go
 * ProtoMarshal/ProtoUnmarshal), so what GET /allocations and DELETE /pins answer is not what POST /pins
 * answered: times in whole seconds, empty metadata null, origins [] rather than null, and
 * user_allocations not kept.
 */
export function storedPin(pin: ClusterPin): ClusterPin {
  return {
    ...pin,
    user_allocations: null,
    expire_at: wholeSeconds(pin.expire_at),
    metadata: pin.metadata && Object.keys(pin.metadata).length > 0 ? pin.metadata : null,
    origins: pin.origins ?? [],
    timestamp: wholeSeconds(pin.timestamp),
  };
}

/**
 * Cluster.setupReplicationFactor + isReplicationFactorValid (cluster_config.go)
 * and the allocator's error for a one-peer cluster. Returns the error message.
 */
export function replicationError(pin: ClusterPin): string | undefined {
  const min = pin.replication_factor_min;
  const max = pin.replication_factor_max;
  if (min > max) return 'cluster.replication_factor_min is larger than max';
  if (min < -1) return 'cluster.replication_factor_min is wrong';
  if (max < -1) return 'cluster.replication_factor_max is wrong';
  if ((min === -1) !== (max === -1)) {
    return 'cluster.replication_factor_min and max must be -1 when one of them is';
  }
  if (min > 1) {
    // allocate.go: this stand-in is a cluster of exactly one peer.
    return (
      'not enough peers to allocate CID. ' +
      `Needed at least: ${min}. Wanted at most: ${max}. Available candidates: 1. See logs for more info.`
    );
  }
  return undefined;
}

/**
 * The pinset. Expired pins (expire_at in the past) are dropped when read; the
 * real cluster drops them at its next state sync, which is later but alike.
 */
export class PinStore {
  private writes: Promise<void> = Promise.resolve();

  private constructor(
    private readonly file: string,
    private readonly map: Map<string, ClusterPin>,
  ) {}

  static async open(dataDir: string): Promise<PinStore> {
    const file = join(dataDir, 'pins.json');
    const list = (await readJson<ClusterPin[]>(file)) ?? [];
    return new PinStore(file, new Map(list.map((p) => [p.cid, storedPin(p)])));
  }

  private dropExpired(): void {
    const now = Date.now();
    for (const [cid, pin] of this.map) {
      if (pin.expire_at !== GO_ZERO_TIME && Date.parse(pin.expire_at) <= now) this.map.delete(cid);
    }
  }

  get(cid: string): ClusterPin | undefined {
    this.dropExpired();
    return this.map.get(cid);
  }

  /** A copy of the pinset, CID -> pin. */
  all(): Map<string, ClusterPin> {
    this.dropExpired();
    return new Map(this.map);
  }

  async set(pin: ClusterPin): Promise<void> {
    this.map.set(pin.cid, storedPin(pin));
    await this.save();
  }

  async delete(cid: string): Promise<void> {
    this.map.delete(cid);
    await this.save();
  }

  /** Serialised writes of the whole pinset; waits for the latest one. */
  private save(): Promise<void> {
    const snapshot = [...this.map.values()];
    this.writes = this.writes.catch(() => undefined).then(() => writeJsonAtomic(this.file, snapshot));
    return this.writes;
  }

  async flush(): Promise<void> {
    await this.writes.catch(() => undefined);
  }
}
