/**
 * The session cookie. Parsing and writing are done here by hand rather than with @fastify/cookie
 * (not installed): the service reads exactly one cookie, unsigned, whose value is base64url, so a
 * few lines cover it and nothing else is needed.
 */
export interface SessionCookie {
  /** `__Host-sealpost_session` over HTTPS: the prefix makes browsers refuse it unless it is Secure,
   *  host-only and Path=/, so a sibling subdomain cannot plant or shadow it. Plain http (local
   *  development) cannot use the prefix: `sealpost_session`. */
  readonly name: string;
  readonly secure: boolean;
  /** The value of our cookie in a Cookie request header, if it looks like a token at all. */
  read(header: string | undefined): string | undefined;
  /** A browser-session cookie (maxAgeSeconds undefined) or a persistent one (remember me). */
  set(token: string, maxAgeSeconds?: number): string;
  /** Logout (docs/specification.md#authentication): an empty value and a negative Max-Age. */
  clear(): string;
}

const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

export function sessionCookie(publicUrl: string): SessionCookie {
  const secure = new URL(publicUrl).protocol !== 'http:';
  const name = secure ? '__Host-sealpost_session' : 'sealpost_session';
  const attributes = `Path=/; HttpOnly${secure ? '; Secure' : ''}; SameSite=Lax`;
  return {
    name,
    secure,
    read(header) {
      if (!header) return undefined;
      for (const part of header.split(';')) {
        const eq = part.indexOf('=');
        if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
        const value = part.slice(eq + 1).trim();
        // The first one that is well-formed: browsers send the most specific cookie first.
        if (TOKEN_SHAPE.test(value)) return value;
      }
      return undefined;
    },
    set(token, maxAgeSeconds) {
      return maxAgeSeconds === undefined
        ? `${name}=${token}; ${attributes}`
        : `${name}=${token}; Max-Age=${maxAgeSeconds}; ${attributes}`;
    },
    clear() {
      return `${name}=; Max-Age=-1; ${attributes}`;
    },
  };
}
