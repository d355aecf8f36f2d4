/**
 * Content storage for the stand-in: UnixFS DAGs built with exactly Kubo's
 * default CIDs, kept on disk so they survive a restart.
 *
 * Kubo/IPFS Cluster defaults (ipfs-cluster/ipfs-cluster api/add.go
 * DefaultAddParams: chunker "size-262144", CidVersion 0, sha2-256, RawLeaves
 * false, balanced layout; go-unixfs balanced builder: 174 links per node).
 * ipfs-unixfs-importer 17 defaults differ (CIDv1, raw leaves, 1 MiB chunks,
 * 1024 links), so every option is set explicitly; with these options its CIDs
 * equal `ipfs add`'s (checked against Debian's ipfs_cid up to 50 MiB).
 */
import { join } from 'node:path';
import * as dagPb from '@ipld/dag-pb';
import { FsBlockstore } from 'blockstore-fs';
import { exporter, NotFoundError as LinkNotFoundError, type UnixFSEntry } from 'ipfs-unixfs-exporter';
import { importer, type ImportCandidateStream, type ImportResult, type ImporterOptions } from 'ipfs-unixfs-importer';
import { fixedSize } from 'ipfs-unixfs-importer/chunker';
import { balanced, trickle } from 'ipfs-unixfs-importer/layout';
import type { CID } from 'multiformats/cid';

/** Kubo's chunk size limit (boxo/chunker ChunkSizeLimit). */
const MAX_CHUNK_SIZE = 1024 * 1024;
/** go-unixfs helpers.DefaultLinksPerBlock. */
const LINKS_PER_BLOCK = 174;

/** Importer options equal to `ipfs add` with no flags. */
export function kuboDefaultImportOptions(): ImporterOptions {
  return importOptions({ cidVersion: 0, rawLeaves: false, chunker: 'size-262144', layout: '', hashFun: 'sha2-256' });
}

export interface ImportSettings {
  cidVersion: number;
  rawLeaves: boolean;
  /** Kubo chunker string; only `size-N` is supported here. */
  chunker: string;
  layout: '' | 'balanced' | 'trickle';
  hashFun: string;
}

/** Importer options for the given /add settings; throws for what the stand-in cannot do. */
export function importOptions(s: ImportSettings): ImporterOptions {
  if (s.cidVersion !== 0 && s.cidVersion !== 1) {
    throw new Error(`bad CID Version: unknown CID version: ${s.cidVersion}`);
  }
  if (s.hashFun.toLowerCase() !== 'sha2-256') {
    throw new Error(`hash function ${s.hashFun} is not supported by the IPFS Cluster stand-in (only sha2-256)`);
  }
  const size = /^size-([0-9]+)$/.exec(s.chunker);
  if (!size) {
    if (/^(rabin|buzhash)/.test(s.chunker)) {
      throw new Error(`chunker ${s.chunker} is not supported by the IPFS Cluster stand-in (only size-N)`);
    }
    throw new Error(`unrecognized chunker option: ${s.chunker}`);
  }
  const chunkSize = Number(size[1]);
  if (chunkSize <= 0) throw new Error('chunker size must be greater than 0');
  if (chunkSize > MAX_CHUNK_SIZE) {
    throw new Error(`chunker parameters may not exceed the maximum chunk size of ${MAX_CHUNK_SIZE}`);
  }
  return {
    cidVersion: s.cidVersion,
    rawLeaves: s.rawLeaves,
    leafType: 'file',
    reduceSingleLeafToSelf: true,
    chunker: fixedSize({ chunkSize }),
    layout:
      s.layout === 'trickle'
        ? trickle({ maxChildrenPerNode: LINKS_PER_BLOCK, layerRepeat: 4 })
        : balanced({ maxChildrenPerNode: LINKS_PER_BLOCK }),
    // One file at a time: parts of a multipart upload arrive one after the
    // other, so the importer must finish a file before asking for the next.
    fileImportConcurrency: 1,
  };
}

/** Blocks on disk (blockstore-fs under DATA/blocks). */
export class BlockStorage {
  private constructor(private readonly store: FsBlockstore) {}

  static async open(dataDir: string): Promise<BlockStorage> {
    const store = new FsBlockstore(join(dataDir, 'blocks'));
    await store.open();
    return new BlockStorage(store);
  }

  /**
   * Imports files/directories; yields one result per file and directory,
   * directories after their contents. `size` is the DAG's cumulative size
   * (what Kubo and the cluster print as "size"), not the file length.
   */
  import(source: ImportCandidateStream, options: ImporterOptions): AsyncGenerator<ImportResult> {
    return importer(source, this.store, options);
  }

  has(cid: CID): Promise<boolean> {
    return this.store.has(cid);
  }

  /**
   * Copies the DAG under `root` from the first peer that has each block, as Kubo's bitswap fetches a
   * pinned DAG from its peers. Returns false when some block is nowhere to be had.
   */
  async fetchDag(root: CID, peers: BlockStorage[]): Promise<boolean> {
    const pending = [root];
    const missing: Array<[CID, Uint8Array]> = [];
    while (pending.length > 0) {
      const cid = pending.pop()!;
      let bytes: Uint8Array | undefined;
      if (await this.store.has(cid)) bytes = await collect(this.store.get(cid));
      else {
        for (const peer of peers) {
          if (await peer.store.has(cid)) {
            bytes = await collect(peer.store.get(cid));
            missing.push([cid, bytes]);
            break;
          }
        }
      }
      if (!bytes) return false;
      if (cid.code === dagPb.code) pending.push(...dagPb.decode(bytes).Links.map((link) => link.Hash));
    }
    // The root last: a root block here then means the whole DAG is (what the pin status asks).
    for (const [cid, bytes] of missing.reverse()) await this.store.put(cid, bytes);
    return true;
  }

  /** Resolves a CID or an /ipfs/CID/sub/path to a UnixFS entry (file content streams from disk). */
  resolve(path: CID | string): Promise<UnixFSEntry> {
    return exporter(path, this.store);
  }

  /**
   * Walks `links` from `root` (the UnixFS names of a directory's entries), as Kubo's `resolve` does for
   * /ipfs/{root}/a/b, and gives the CID at the end. Throws with Kubo's message for a missing link, and
   * the proxy's "not found locally" for a block this daemon does not have.
   */
  async resolvePath(root: CID, links: string[]): Promise<CID> {
    let cid = root;
    for (const name of links) {
      if (!(await this.store.has(cid))) {
        throw new Error(`block was not found locally (offline): ipld: could not find ${cid}`);
      }
      try {
        cid = (await exporter(`/ipfs/${cid}/${name}`, this.store)).cid;
      } catch (err) {
        if (!(err instanceof LinkNotFoundError)) throw err;
        throw new Error(`no link named ${JSON.stringify(name)} under ${cid}`);
      }
    }
    return cid;
  }

  /**
   * Flips one bit in the middle of the first leaf block under `root`, on disk, as a failing disk or a stray
   * write would: the block keeps its name (CID) and the store does not notice, as Kubo's flatfs does not
   * (Datastore.HashOnRead is off by default). For tests of readers that verify what they get.
   */
  async damage(root: CID): Promise<void> {
    let cid = root;
    for (;;) {
      const bytes = await collect(this.store.get(cid));
      const links = cid.code === dagPb.code ? dagPb.decode(bytes).Links : [];
      if (links.length > 0) {
        cid = links[0]!.Hash;
        continue;
      }
      const changed = Uint8Array.from(bytes);
      changed[changed.length >> 1]! ^= 0x01;
      await this.store.put(cid, changed);
      return;
    }
  }

  close(): Promise<void> {
    return this.store.close();
  }
}

/** A block as one buffer, whether the store hands it over whole or in pieces. */
async function collect(value: Uint8Array | AsyncIterable<Uint8Array> | Promise<Uint8Array>): Promise<Uint8Array> {
  const resolved = await value;
  if (resolved instanceof Uint8Array) return resolved;
  const chunks: Uint8Array[] = [];
  for await (const chunk of resolved) chunks.push(chunk);
  return Buffer.concat(chunks);
}
