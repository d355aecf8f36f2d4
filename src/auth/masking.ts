/**
 * Log lines name who a code went to without spelling out personal data: enough to follow a support
 * case (country code and last digits, first letter and domain), not enough to harvest numbers.
 */
export function maskMobile(e164: string): string {
  return e164.length <= 6 ? '***' : `${e164.slice(0, 3)}${'*'.repeat(e164.length - 5)}${e164.slice(-2)}`;
}

export function maskEmail(address: string): string {
  const at = address.lastIndexOf('@');
  return at <= 0 ? '***' : `${address[0]}***${address.slice(at)}`;
}

/**
 * A client's address as a trail keeps it (docs/specification.md#trail): the network, not the subscriber.
 * IPv4 keeps its /24 (203.0.113.0/24), IPv6 its /48 (2001:db8:1::/48); the rate limits' key decides the shape.
 */
export function maskClient(key: string): string {
  const v4 = /^(\d+\.\d+\.\d+)\.\d+$/.exec(key);
  if (v4) return `${v4[1]}.0/24`;
  const v6 = /^([0-9a-f]+):([0-9a-f]+):([0-9a-f]+):/i.exec(key);
  if (v6) return `${v6[1]}:${v6[2]}:${v6[3]}::/48`;
  return '***';
}
