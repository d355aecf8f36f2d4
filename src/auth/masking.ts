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
