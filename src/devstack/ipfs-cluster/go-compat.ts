/**
 * Small re-implementations of the Go standard-library behaviour that the real
 * IPFS Cluster (Go) shows on the wire, so the stand-in parses and prints the
 * same way:
 * - url.Values / (*url.URL).Query(): how query strings are split and decoded;
 *   url.QueryEscape, how the cluster writes a path into its call to Kubo;
 * - strconv.ParseBool / strconv.Atoi: what api/add.go's parseBoolParam and
 *   parseIntParam accept;
 * - encoding/json: HTML-safe string escaping and time.Time's RFC 3339 form.
 * (time.ParseDuration, for `expire-in`, is src/kernel/duration.ts.)
 */

/** Decoded query: Go's url.Values (a key may repeat; Get returns the first). */
export class GoQuery {
  readonly values = new Map<string, string[]>();

  /**
   * Like Go's url.ParseQuery as used by r.URL.Query(): pairs split on '&',
   * a pair containing ';' is dropped (Go >= 1.17), '+' means space, and a
   * pair with a bad %-escape is dropped (Query() ignores the error).
   */
  constructor(rawQuery: string) {
    for (const pair of rawQuery.split('&')) {
      if (pair === '' || pair.includes(';')) continue;
      const eq = pair.indexOf('=');
      const key = queryUnescape(eq < 0 ? pair : pair.slice(0, eq));
      const value = queryUnescape(eq < 0 ? '' : pair.slice(eq + 1));
      if (key === undefined || value === undefined) continue;
      const list = this.values.get(key) ?? [];
      list.push(value);
      this.values.set(key, list);
    }
  }

  /** url.Values.Get: first value, or '' when absent. */
  get(name: string): string {
    return this.values.get(name)?.[0] ?? '';
  }

  all(name: string): string[] {
    return this.values.get(name) ?? [];
  }

  keys(): string[] {
    return [...this.values.keys()];
  }

  toRecord(): Record<string, string[]> {
    return Object.fromEntries(this.values);
  }
}

/** Go's url.QueryUnescape; undefined where Go would return an error. */
export function queryUnescape(s: string): string | undefined {
  if (/%(?![0-9a-fA-F]{2})/.test(s)) return undefined;
  // Go decodes %XX to raw bytes and then reads the bytes as a string, so
  // literal characters keep their UTF-8 bytes and escapes become bytes.
  const out: number[] = [];
  const text = s.replace(/\+/g, ' ');
  for (let i = 0; i < text.length; ) {
    if (text[i] === '%') {
      out.push(parseInt(text.slice(i + 1, i + 3), 16));
      i += 3;
    } else {
      const ch = String.fromCodePoint(text.codePointAt(i)!);
      out.push(...Buffer.from(ch, 'utf8'));
      i += ch.length;
    }
  }
  return Buffer.from(out).toString('utf8');
}

/** Go's url.QueryEscape: only A-Z a-z 0-9 - _ . ~ stay, a space becomes '+', the rest %XX. */
export function goQueryEscape(s: string): string {
  return encodeURIComponent(s)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%20/g, '+');
}

/** strconv.ParseBool. */
export function parseGoBool(v: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  return undefined;
}

/** strconv.Atoi (64-bit int): optional sign, decimal digits only. */
export function parseGoInt(v: string): number | undefined {
  if (!/^[+-]?[0-9]+$/.test(v)) return undefined;
  const n = BigInt(v);
  if (n > 9223372036854775807n || n < -9223372036854775808n) return undefined;
  return Number(n);
}

/**
 * encoding/json's Encoder.Encode: like JSON.stringify, but '<', '>', '&',
 * U+2028 and U+2029 are escaped (Go's HTML-safe default), and a newline ends it.
 */
export function goJsonLine(value: unknown): string {
  return `${JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => {
    return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  })}\n`;
}

/** Go's zero time.Time as JSON. */
export const GO_ZERO_TIME = '0001-01-01T00:00:00Z';

/** time.Time as JSON (RFC 3339 with nanoseconds, trailing zeros trimmed), UTC. */
export function goTime(ms: number): string {
  const iso = new Date(ms).toISOString(); // 2026-01-02T03:04:05.120Z
  return iso.replace(/\.(\d*?)0*Z$/, (_m, frac: string) => (frac ? `.${frac}Z` : 'Z'));
}
