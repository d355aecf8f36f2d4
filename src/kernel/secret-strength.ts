/**
 * What production refuses in a secret (docs/decisions.md#secrets-in-production): a value copied from
 * .env.example, a token short enough to guess, a key with no entropy, and one value used for two secrets
 * (a leak of the weaker one, say the S3 password in a log, would then open the stronger). Each refusal
 * names the variable and says how to make a good value; the value itself is never shown.
 */

/** How a good token or secret is made: the command .env.example gives. */
export const GENERATE_TOKEN = '`openssl rand -base64 32`';
/** How a good 32-byte key is made. */
export const GENERATE_KEY = '`openssl rand -hex 32`';

/** Tokens and secrets shorter than this are refused in production: 32 characters of base64 are 192 bits. */
export const MIN_SECRET_LENGTH = 32;

/**
 * The placeholders .env.example ships (every value there: `CHANGE-ME-…` and the all-zero keys, which the
 * all-one-byte rule refuses) and the words people type instead of a secret.
 */
const PLACEHOLDER = /change[-_ .]?me|replace[-_ .]?me|^(?:secret|password|passw0rd|token|admin|test|example)$/i;

/** Why `raw` is a placeholder rather than a secret (any secret variable); undefined when it is not. */
export function placeholderProblem(name: string, raw: string | undefined): string | undefined {
  if (raw === undefined || !PLACEHOLDER.test(raw.trim())) return undefined;
  return `${name} holds a placeholder (as in .env.example), refused in production: generate one with ${GENERATE_TOKEN}`;
}

/** Why `raw` is not a production token or secret (admin and service tokens, auth secret); undefined when it is. */
export function weakSecretProblem(name: string, raw: string): string | undefined {
  const fix = `generate one with ${GENERATE_TOKEN}`;
  const placeholder = placeholderProblem(name, raw);
  if (placeholder) return placeholder;
  if (raw.length < MIN_SECRET_LENGTH)
    return `${name} is ${raw.length} characters long, refused in production (at least ${MIN_SECRET_LENGTH}): ${fix}`;
  if (oneRepeated(Buffer.from(raw, 'utf8'))) return `${name} is one character repeated, refused in production: ${fix}`;
  return undefined;
}

/** Why `key` is not a production key (a seal master key; its length is the parser's); undefined when it is. */
export function weakKeyProblem(name: string, key: Buffer): string | undefined {
  if (oneRepeated(key))
    return (
      `${name} is one byte repeated (as the zeros of .env.example), refused in production: it could ` +
      `never be rotated away from once messages are sealed under it; generate one with ${GENERATE_KEY}`
    );
  return undefined;
}

/** Secrets given the same value, as problems naming both variables; `given` maps variable names to raw values. */
export function sharedSecretProblems(given: ReadonlyArray<readonly [string, string | undefined]>): string[] {
  const seen = new Map<string, string>();
  const problems: string[] = [];
  for (const [name, raw] of given) {
    if (raw === undefined || raw.trim() === '') continue;
    const other = seen.get(raw);
    if (other === undefined) seen.set(raw, name);
    else
      problems.push(
        `${name} has the same value as ${other}, refused in production: each secret needs its own; ` +
          `generate one with ${GENERATE_TOKEN}`,
      );
  }
  return problems;
}

function oneRepeated(bytes: Buffer): boolean {
  return bytes.length > 0 && bytes.every((byte) => byte === bytes[0]);
}
