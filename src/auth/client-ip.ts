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

// The rate-limit key of an address, shared with the exchange's per-client SMTP limits.
export { clientKey } from '../kernel/client-key.ts';
