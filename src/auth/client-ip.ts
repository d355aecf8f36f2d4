import { isIPv4, isIPv6 } from 'node:net';
import type { FastifyRequest } from 'fastify';

/**
 * The client address that the per-IP SMS limit counts. With AUTH_TRUST_PROXY=N the N-th address from
 * the right of X-Forwarded-For is used: the entries to its right were added by our own proxies, those
 * to its left came from the client and can be anything. Without trusted proxies, the connection's peer.
 */
export function clientAddress(request: FastifyRequest, trustedHops: number): string {
  const peer = request.socket.remoteAddress ?? 'unknown';
  if (trustedHops === 0) return peer;
  const header = request.headers['x-forwarded-for'];
  const chain = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  // The peer is the last proxy; hop 1 is the address it saw, the right-most header entry.
  const candidate = chain[chain.length - trustedHops];
  return candidate && (isIPv4(candidate) || isIPv6(candidate)) ? candidate : peer;
}

/**
 * The rate-limit key of an address: IPv4 as is, IPv4-mapped IPv6 as IPv4, other IPv6 cut to its /64
 * (one subscriber usually holds a whole /64, so counting single IPv6 addresses would count nothing).
 */
export function clientKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  const groups = expandIPv6(address.split('%')[0]!);
  return `${groups.slice(0, 4).join(':')}::/64`;
}

function expandIPv6(address: string): string[] {
  let text = address;
  // A trailing dotted IPv4 part (::1.2.3.4) is two groups.
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const missing = tail === undefined ? 0 : 8 - left.length - right.length;
  return [...left, ...Array<string>(missing).fill('0'), ...right].map((group) =>
    parseInt(group || '0', 16).toString(16),
  );
}
