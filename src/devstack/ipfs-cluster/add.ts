/**
 * POST /add: multipart upload streamed into the UnixFS importer, answered the
 * way IPFS Cluster's adderutils.AddMultipartHTTPHandler does
 * (ipfs-cluster/ipfs-cluster adder/adderutils/adderutils.go):
 * - stream-channels=true (default): 200 at once with `X-Chunked-Output: 1`
 *   and `Trailer: X-Stream-Error`, one AddedOutput JSON object per line;
 *   an error after that goes into the X-Stream-Error trailer.
 * - stream-channels=false: outputs are buffered and sent as one JSON array;
 *   an error gives 500 {"code":500,"message":...}.
 * - Always Content-Type application/json, Cache-Control no-cache and
 *   Connection close ("things break badly when adding" otherwise).
 * Before any of that, r.MultipartReader() and AddParamsFromQuery failures
 * answer 400 with the error JSON (api/rest/restapi.go addHandler).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { posix } from 'node:path';
import { Busboy } from '@fastify/busboy';
import type { ImportCandidateStream } from 'ipfs-unixfs-importer';
import { importOptions, type BlockStorage } from './blocks.ts';
import { goJsonLine, queryUnescape, type GoQuery } from './go-compat.ts';
import { addParamsFromQuery, ParamError, type AddParams } from './params.ts';
import { makePin, replicationError, type PinStore } from './state.ts';

export interface AddContext {
  blocks: BlockStorage;
  pins: PinStore;
  /** This peer's ID: the allocations of everything added here. */
  self: string;
  failPins(): boolean;
  /** The IPFS daemon's error ('' when it answers): the real adder writes every block to it. */
  ipfsError(): string;
  sendError(res: ServerResponse, status: number, message: string): void;
}

/** Go's api.AddedOutput JSON: name, cid (string or null), bytes/size/allocations omitted when empty. */
function addedOutput(
  name: string,
  cid: string | null,
  extra: { bytes?: number; size?: number; allocations?: string[] },
) {
  const out: Record<string, unknown> = { name, cid };
  if (extra.bytes) out.bytes = extra.bytes;
  if (extra.size) out.size = extra.size;
  if (extra.allocations?.length) out.allocations = extra.allocations;
  return out;
}

/** go-ipfs-files fileName(): QueryUnescape, then path.Clean("/"+name), relative to "/". */
function partName(filename: string | undefined): string {
  const raw = filename ?? '';
  let p = posix.normalize(`/${queryUnescape(raw) ?? raw}`);
  if (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1);
  return p.slice(1);
}

/** An async queue of import candidates fed by busboy's 'file' events. */
class CandidateQueue {
  private items: Array<{ path: string; content?: AsyncIterable<Uint8Array> }> = [];
  private wake: (() => void) | undefined;
  private ended = false;
  private error: Error | undefined;

  push(item: { path: string; content?: AsyncIterable<Uint8Array> }): void {
    this.items.push(item);
    this.wake?.();
  }
  end(): void {
    this.ended = true;
    this.wake?.();
  }
  fail(err: Error): void {
    this.error ??= err;
    this.wake?.();
  }
  async *[Symbol.asyncIterator]() {
    for (;;) {
      if (this.error) throw this.error;
      const next = this.items.shift();
      if (next) yield next;
      else if (this.ended) return;
      else await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }
}

/** Yields the part's bytes, reporting progress like ipfsadd's progressReader (every 256 KiB and at EOF). */
async function* withProgress(src: AsyncIterable<Uint8Array>, onBytes: (n: number) => void) {
  let total = 0;
  let last = 0;
  for await (const chunk of src) {
    total += chunk.length;
    if (total - last >= 256 * 1024) {
      last = total;
      onBytes(last);
    }
    yield chunk;
  }
  onBytes(total);
}

/** Media type of a Content-Type header, as Go's mime.ParseMediaType would see it. */
function multipartBoundary(contentType: string): { ok: boolean; error?: string } {
  const media = contentType.split(';')[0]!.trim().toLowerCase();
  // net/http (*Request).MultipartReader accepts multipart/form-data and multipart/mixed.
  if (media !== 'multipart/form-data' && media !== 'multipart/mixed') {
    return { ok: false, error: "request Content-Type isn't multipart/form-data" };
  }
  if (!/;\s*boundary=("[^"]+"|[^;\s]+)/i.test(contentType)) {
    return { ok: false, error: 'no multipart boundary param in Content-Type' };
  }
  return { ok: true };
}

/** Consumes what is left of the request body (so the answer is read before the socket closes). */
function drain(req: IncomingMessage): Promise<void> {
  if (req.readableEnded || req.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    req
      .on('end', resolve)
      .on('error', () => resolve())
      .on('close', resolve);
    req.resume();
  });
}

/** Errors that the real adder reports (after the headers) for options this stand-in cannot honour. */
function unsupported(p: AddParams): string | undefined {
  if (p.format === 'car') return 'format=car is not supported by the IPFS Cluster stand-in';
  if (p.shard) return 'shard=true is not supported by the IPFS Cluster stand-in';
  if (p.noCopy) return 'nocopy=true is not supported by the IPFS Cluster stand-in';
  return undefined;
}

export async function handleAdd(ctx: AddContext, req: IncomingMessage, res: ServerResponse, query: GoQuery) {
  const contentType = req.headers['content-type'] ?? '';
  const mp = multipartBoundary(contentType);
  let params: AddParams | undefined;
  let earlyError = mp.error;
  if (!earlyError) {
    try {
      params = addParamsFromQuery(query);
    } catch (err) {
      if (!(err instanceof ParamError)) throw err;
      earlyError = err.message;
    }
  }
  if (earlyError || !params) {
    await drain(req);
    ctx.sendError(res, 400, earlyError ?? 'bad request');
    return;
  }

  res.setHeader('Content-Type', 'application/json');
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('Connection', 'close');
  const buffered: unknown[] = [];
  const emit = (o: unknown) => (params.streamChannels ? res.write(goJsonLine(o)) : buffered.push(o));
  if (params.streamChannels) {
    res.setHeader('X-Chunked-Output', '1');
    res.setHeader('Trailer', 'X-Stream-Error');
    res.writeHead(200);
    res.flushHeaders();
  }

  let error: string | undefined;
  try {
    const problem = unsupported(params);
    if (problem) throw new Error(problem);
    if (ctx.ipfsError()) throw new Error(ctx.ipfsError());
    const root = await importParts(ctx, req, contentType, params, emit);
    if (!params.noPin) {
      // single.DAGService.Finalize: pin the root with the request's pin options, recursively.
      if (ctx.failPins()) throw new Error('failPins: the IPFS Cluster stand-in was told to fail pin operations');
      const pin = makePin(root, { ...params.pin, mode: 'recursive' }, ctx.self);
      const bad = replicationError(pin);
      if (bad) throw new Error(bad);
      await ctx.pins.set(pin);
    }
  } catch (err) {
    error = err instanceof Error ? err.message : String(err);
    req.unpipe();
    await drain(req);
  }

  if (params.streamChannels) {
    // Header values cannot hold newlines or non-Latin-1 characters.
    if (error) res.addTrailers({ 'X-Stream-Error': error.replace(/[^\t\x20-\x7e]/g, ' ') });
    res.end();
  } else if (error) {
    ctx.sendError(res, 500, error);
  } else {
    res.writeHead(200);
    res.end(goJsonLine(buffered.length ? buffered : null)); // Go encodes a nil slice as null
  }
}

/** Streams every multipart part through the importer; returns the root CID the cluster pins. */
async function importParts(
  ctx: AddContext,
  req: IncomingMessage,
  contentType: string,
  params: AddParams,
  emit: (o: unknown) => void,
): Promise<string> {
  const options = { ...importOptions(params), wrapWithDirectory: params.wrap };
  const queue = new CandidateQueue();
  let current: NodeJS.ReadableStream | undefined;
  // busboy only knows multipart/form-data; multipart/mixed parses the same.
  const bb = Busboy({
    headers: { 'content-type': contentType.replace(/^\s*multipart\/mixed/i, 'multipart/form-data') },
    preservePath: true,
    isPartAFile: () => true, // Go treats every part as a file, named or not
  });
  bb.on('file', (_field, stream, filename, _encoding, mimeType) => {
    const path = partName(filename);
    const media = (mimeType ?? '').toLowerCase();
    if (media === 'application/x-directory' || media.startsWith('multipart/')) {
      stream.resume();
      queue.push({ path });
    } else if (media === 'application/symlink') {
      stream.resume();
      queue.fail(new Error('symlinks are not supported by the IPFS Cluster stand-in'));
    } else {
      current = stream;
      const content = params.progress
        ? withProgress(stream, (bytes) => emit(addedOutput(path, null, { bytes })))
        : stream;
      queue.push({ path, content });
    }
  });
  bb.on('finish', () => queue.end());
  const fail = (err: Error) => {
    queue.fail(err);
    (current as { destroy?: (e: Error) => void } | undefined)?.destroy?.(err); // unblocks the importer
  };
  bb.on('error', fail);
  req.on('close', () => {
    if (!req.complete) fail(new Error('request aborted'));
  });
  req.pipe(bb);

  // The cluster pins the last top-level entry it added (adder.go FromFiles).
  let root: string | undefined;
  for await (const entry of ctx.blocks.import(queue as ImportCandidateStream, options)) {
    const name = entry.path ?? '';
    const cid = entry.cid.toString();
    emit(addedOutput(name, cid, { size: Number(entry.size), allocations: [ctx.self] }));
    if (!name.includes('/')) root = cid;
  }
  if (root === undefined) throw new Error('no files were found in the multipart request');
  return root;
}
