import { isIPv6 } from 'node:net';

/**
 * The rate-limit key of an address: IPv4 as is, IPv4-mapped IPv6 as IPv4, other IPv6 cut to its /64
 * (one subscriber usually holds a whole /64, so counting single IPv6 addresses would count nothing):
 * what the auth service's per-IP limits and the exchange's per-client SMTP limits count.
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
