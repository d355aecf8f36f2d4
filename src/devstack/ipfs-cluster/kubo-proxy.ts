/**
 * The IPFS proxy listener (real default 127.0.0.1:9095). The real proxy
 * (ipfs-cluster/ipfs-cluster api/ipfsproxy/ipfsproxy.go) hijacks a few
 * /api/v0 commands (add, pin/*, repo/*, block/put, dag/put) and reverse-proxies
 * everything else, /api/v0/cat included, unchanged to Kubo's RPC API. It has
 * no authentication and no TLS of its own; the Authorization header reaches
 * Kubo, whose API.Authorizations check (kubo core/corehttp/commands.go
 * withAuthSecrets) answers 403 text/plain "Kubo RPC Access Denied: ..." unless
 * the header is exactly an allowed secret. The stand-in plays that Kubo with
 * the stand-in's user/pass as its one allowed `basic:` secret.
 *
 * /api/v0/cat as Kubo answers it (go-ipfs-cmds http/handler.go and
 * responseemitter.go):
 * - POST only: GET/HEAD/PUT... -> 405 "405 - Method Not Allowed" text/plain
 *   with `Allow: OPTIONS, POST`; OPTIONS -> 204.
 * - arg=<path> (repeatable, contents concatenated), offset, length.
 * - success: 200, Content-Type text/plain, X-Stream-Output: 1,
 *   X-Content-Length, Trailer: X-Stream-Error (set if reading fails midway).
 * - errors before output: 500 {"Message":"...","Code":0,"Type":"error"}
 *   (cmds.Error, ErrNormal), invalid paths included (Kubo has no 400 here).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { UnixFSEntry } from 'ipfs-unixfs-exporter';
import { CID } from 'multiformats/cid';
import type { BlockStorage } from './blocks.ts';
import { goJsonLine, parseGoInt, type GoQuery } from './go-compat.ts';

export interface ProxyContext {
  blocks: BlockStorage;
  user?: string;
  pass?: string;
  /** The IPFS daemon behind the proxy is stopped: the real proxy's reverse proxy answers 502. */
  down?: () => boolean;
}

const EXPOSED = 'X-Stream-Output, X-Chunked-Output, X-Content-Length';

/** Entries that have bytes to cat. */
type ContentEntry = Extract<UnixFSEntry, { type: 'file' | 'raw' | 'identity' }>;

function kuboError(res: ServerResponse, message: string, status = 500): void {
  res.setHeader('Content-Type', 'application/json');
  res.setHeader('Trailer', 'X-Stream-Error');
  res.writeHead(status);
  res.end(goJsonLine({ Message: message, Code: status === 400 ? 1 : 0, Type: 'error' }));
}

/** Go's http.Error: text/plain, nosniff, message + newline. */
function httpError(res: ServerResponse, status: number, message: string): void {
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.writeHead(status);
  res.end(`${message}\n`);
}

/** Kubo's PathOrCidPath: "/ipfs/CID[/sub/path]" or a bare CID. */
function parseIpfsPath(arg: string): string {
  const invalid = (why: string) => new Error(`invalid path ${JSON.stringify(arg)}: ${why}`);
  if (arg.startsWith('/ipfs/')) {
    const [, , cid = ''] = arg.split('/');
    try {
      CID.parse(cid);
    } catch (err) {
      throw invalid(`invalid cid: ${(err as Error).message}`);
    }
    return arg;
  }
  if (arg.startsWith('/')) throw invalid('unsupported namespace (the stand-in only resolves /ipfs paths)');
  try {
    return `/ipfs/${CID.parse(arg).toString()}`;
  } catch {
    throw invalid('path does not have enough components');
  }
}

/** The message Kubo gives for a block it does not have (offline). */
function notFound(err: unknown, path: string): string {
  if ((err as Error)?.name === 'NotFoundError') {
    return `block was not found locally (offline): ipld: could not find ${path.split('/')[2]}`;
  }
  return err instanceof Error ? err.message : String(err);
}

async function cat(ctx: ProxyContext, res: ServerResponse, q: GoQuery): Promise<void> {
  const args = q.all('arg');
  if (args.length === 0) return kuboError(res, 'argument "ipfs-path" is required');
  const int = (name: string): number | undefined => {
    const v = q.get(name);
    if (v === '') return undefined;
    const n = parseGoInt(v);
    if (n === undefined) {
      throw Object.assign(
        new Error(`could not convert value ${JSON.stringify(v)} to type "int64" (for option "-${name}")`),
        { status: 400 },
      );
    }
    return n;
  };
  let offset: number;
  let max: number | undefined;
  const files: Array<{ entry: ContentEntry; skip: number; take: number; path: string }> = [];
  try {
    offset = int('offset') ?? 0;
    max = int('length');
  } catch (err) {
    return httpError(res, 400, (err as Error).message);
  }
  if (offset < 0) return kuboError(res, 'cannot specify negative offset');
  if (max !== undefined && max < 0) return kuboError(res, 'cannot specify negative length');

  // Resolve every path first, as Kubo's cat() does, so lookup errors come before any output.
  let length = 0;
  for (const arg of max === 0 ? [] : args) {
    let path: string;
    let entry: UnixFSEntry;
    try {
      path = parseIpfsPath(arg);
      entry = await ctx.blocks.resolve(path);
    } catch (err) {
      return kuboError(res, notFound(err, arg.startsWith('/ipfs/') ? arg : `/ipfs/${arg}`));
    }
    if (entry.type === 'directory') return kuboError(res, 'this dag node is a directory');
    if (entry.type === 'object') return kuboError(res, 'not unixfs data');
    const size = Number(entry.size);
    if (offset > size) {
      offset -= size;
      continue;
    }
    let take = size - offset;
    if (max !== undefined && length + take >= max) take = max - length;
    files.push({ entry, skip: offset, take, path });
    length += take;
    offset = 0;
    if (max !== undefined && length >= max) break;
  }

  res.setHeader('Access-Control-Allow-Headers', EXPOSED);
  res.setHeader('Access-Control-Expose-Headers', EXPOSED);
  res.setHeader('Trailer', 'X-Stream-Error');
  res.setHeader('X-Content-Length', String(length));
  res.setHeader('X-Stream-Output', '1');
  res.setHeader('Content-Type', 'text/plain');
  res.writeHead(200);
  try {
    for (const f of files) {
      for await (const chunk of f.entry.content({ offset: f.skip, length: f.take })) {
        if (!res.write(chunk)) await new Promise((resolve) => res.once('drain', resolve));
      }
    }
  } catch (err) {
    res.addTrailers({ 'X-Stream-Error': notFound(err, files[0]?.path ?? '').replace(/[^\t\x20-\x7e]/g, ' ') });
  }
  res.end();
}

export async function handleProxy(
  ctx: ProxyContext,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  q: GoQuery,
) {
  if (ctx.down?.()) {
    // Go's httputil.ReverseProxy when the backend refuses the connection: 502 and an empty body.
    req.resume();
    res.writeHead(502);
    res.end();
    return;
  }
  if (ctx.user !== undefined && ctx.pass !== undefined) {
    // config.ConvertAuthSecret("basic:user:pass") and an exact header match.
    const expected = `Basic ${Buffer.from(`${ctx.user}:${ctx.pass}`).toString('base64')}`;
    if (req.headers.authorization !== expected) {
      return httpError(
        res,
        403,
        'Kubo RPC Access Denied: Please provide a valid authorization ' +
          'token as defined in the API.Authorizations configuration.',
      );
    }
  }
  if (path === '/api/v0/version' && req.method === 'POST') {
    // Kubo's `ipfs version` answer (core/commands/version.go), which Sealpost's readiness asks for to
    // know that the read path reaches an IPFS API at all.
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(goJsonLine({ Version: '0.0.0-sealpost-stand-in', Commit: '', Repo: '16', System: 'node', Golang: '' }));
    return;
  }
  if (path !== '/api/v0/cat') return httpError(res, 404, '404 page not found');
  if (req.method === 'OPTIONS') {
    res.setHeader('Allow', 'OPTIONS, POST');
    res.writeHead(204);
    res.end();
    return;
  }
  if (req.method !== 'POST') {
    res.setHeader('Allow', 'OPTIONS, POST');
    return httpError(res, 405, '405 - Method Not Allowed');
  }
  req.resume(); // cat reads no body
  await cat(ctx, res, q);
}
