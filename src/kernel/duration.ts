/**
 * Go `time.Duration` strings ("1h30m", "300ms", "-1.5h") as bigint nanoseconds.
 *
 * `parseDuration` is a port of Go's `time.ParseDuration` (src/time/format.go: ParseDuration,
 * leadingInt, leadingFraction) and `formatDuration` of `Duration.String()` (src/time/time.go),
 * so that a value written for a Go service means the same thing here. Values live in the
 * int64 range, like Go's Duration; bigint keeps every nanosecond exact.
 */

/** Thrown by parseDuration; the message is Go's, e.g. `time: invalid duration "1x"`. */
export class DurationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DurationError';
  }
}

const MAX_INT64 = (1n << 63n) - 1n;
const MIN_INT64 = -(1n << 63n);
/** Largest magnitude the parser accumulates: |MIN_INT64|, so that the minimum can be parsed. */
const MAGNITUDE_LIMIT = 1n << 63n;

const SECOND = 1_000_000_000n;

const UNITS: ReadonlyMap<string, bigint> = new Map([
  ['ns', 1n],
  ['us', 1_000n],
  ['\u00b5s', 1_000n], // micro sign, what formatDuration (and Go's String) writes
  ['\u03bcs', 1_000n], // Greek mu, which looks the same and is accepted too
  ['ms', 1_000_000n],
  ['s', SECOND],
  ['m', 60n * SECOND],
  ['h', 3600n * SECOND],
]);

/**
 * Go's time-package `quote`: wraps in double quotes, backslash-escapes `"` and `\`, and writes
 * control and non-ASCII characters as `\x` escapes of their UTF-8 bytes (so `µ` is `\xc2\xb5`).
 * A lone surrogate becomes U+FFFD's bytes, as Go does for invalid UTF-8.
 */
function quote(s: string): string {
  const encoder = new TextEncoder();
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (cp < 0x20 || cp >= 0x80) {
      for (const byte of encoder.encode(ch)) out += `\\x${byte.toString(16).padStart(2, '0')}`;
    } else {
      out += ch === '"' || ch === '\\' ? `\\${ch}` : ch;
    }
  }
  return `${out}"`;
}

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';

/**
 * Parses a Go duration string to nanoseconds: an optional sign, then one or more
 * `<number><unit>` terms (`1h30m`, `1.5h`, `.5s`, `5.s`). A bare `0` (or `+0`, `-0`) is the
 * only number allowed without a unit. Throws DurationError for anything else, including a
 * result outside int64 (only the negative side may reach 2^63, so `-2562047h47m16.854775808s`
 * parses and `9223372036854775808ns` does not).
 */
export function parseDuration(text: string): bigint {
  const invalid = () => new DurationError(`time: invalid duration ${quote(text)}`);
  let i = 0;
  let neg = false;
  if (text[0] === '-' || text[0] === '+') {
    neg = text[0] === '-';
    i = 1;
  }
  if (text.slice(i) === '0') return 0n;
  if (i === text.length) throw invalid();

  // Go accumulates the magnitude in a uint64 and negates at the end; bigint does not wrap,
  // so the checks against MAGNITUDE_LIMIT below are exactly Go's overflow checks.
  let total = 0n;
  while (i < text.length) {
    if (!(text[i] === '.' || isDigit(text[i]))) throw invalid();

    // Integer part: an overflow here is an error, unlike in the fraction.
    const intStart = i;
    let whole = 0n;
    for (; isDigit(text[i]); i++) {
      whole = whole * 10n + BigInt(text.charCodeAt(i) - 48);
      if (whole > MAGNITUDE_LIMIT) throw invalid();
    }
    const hasInt = i > intStart;

    // Fraction: Go keeps at most the digits that fit (frac <= 2^63) and silently drops the
    // rest, so "0.100000000000000000000h" is fine. `scale` is a float64 power of ten, as in Go.
    let frac = 0n;
    let scale = 1;
    let hasFrac = false;
    if (text[i] === '.') {
      i++;
      const fracStart = i;
      let saturated = false;
      for (; isDigit(text[i]); i++) {
        if (saturated) continue;
        const next = frac * 10n + BigInt(text.charCodeAt(i) - 48);
        if (next > MAGNITUDE_LIMIT) {
          saturated = true;
          continue;
        }
        frac = next;
        scale *= 10;
      }
      hasFrac = i > fracStart;
    }
    if (!hasInt && !hasFrac) throw invalid(); // ".", ".s", "-.s"

    // The unit runs up to the next digit or '.', so "1d2h" reports "d", not "d2h".
    const unitStart = i;
    while (i < text.length && text[i] !== '.' && !isDigit(text[i])) i++;
    if (i === unitStart) throw new DurationError(`time: missing unit in duration ${quote(text)}`);
    const unitName = text.slice(unitStart, i);
    const unit = UNITS.get(unitName);
    if (unit === undefined) {
      throw new DurationError(`time: unknown unit ${quote(unitName)} in duration ${quote(text)}`);
    }

    if (whole > MAGNITUDE_LIMIT / unit) throw invalid();
    let term = whole * unit;
    if (frac > 0n) {
      // Go computes the fraction in float64 (exact to the nanosecond for up to an hour) and
      // converts with uint64(), which truncates: "1.9999999999ns" is 1ns, not 2ns. Number and
      // Go's float64 are the same IEEE double, so the result matches Go bit for bit.
      term += BigInt(Math.trunc(Number(frac) * (Number(unit) / scale)));
      if (term > MAGNITUDE_LIMIT) throw invalid();
    }
    // Deliberate difference from Go: there the uint64 sum of two terms of exactly 2^63
    // wraps to 0, so Go accepts "9223372036854775808ns9223372036854775808ns" as 0.
    // Here it is the overflow it is.
    total += term;
    if (total > MAGNITUDE_LIMIT) throw invalid();
  }
  if (neg) return -total;
  if (total > MAX_INT64) throw invalid();
  return total;
}

/** Whether parseDuration accepts the text. */
export function isValidDuration(text: string): boolean {
  try {
    parseDuration(text);
    return true;
  } catch (err) {
    if (err instanceof DurationError) return false;
    throw err;
  }
}

/**
 * The low `prec` decimal digits of v as a fraction (".5", ".001"), trailing zeros dropped and
 * nothing at all when they are all zero, plus v with those digits removed (Go's fmtFrac).
 */
function fractionDigits(v: bigint, prec: number): [string, bigint] {
  let digits = '';
  for (let k = 0; k < prec; k++) {
    const digit = v % 10n;
    if (digits !== '' || digit !== 0n) digits = digit.toString() + digits;
    v /= 10n;
  }
  return [digits === '' ? '' : `.${digits}`, v];
}

/**
 * Go's `Duration.String()`: "72h3m0.5s", hours being the largest unit (days vary in length);
 * below one second the largest of ms/µs/ns that keeps a non-zero leading digit ("1.1µs");
 * zero is "0s". Throws RangeError outside int64, where Go's Duration cannot go.
 */
export function formatDuration(ns: bigint): string {
  if (ns < MIN_INT64 || ns > MAX_INT64) {
    throw new RangeError(`duration ${ns}ns is outside the int64 range`);
  }
  if (ns === 0n) return '0s';
  const neg = ns < 0n;
  const u = neg ? -ns : ns; // bigint, so even -2^63 negates without overflow

  let out: string;
  if (u < SECOND) {
    const [unit, prec]: [string, number] = u < 1_000n ? ['ns', 0] : u < 1_000_000n ? ['\u00b5s', 3] : ['ms', 6];
    const [frac, int] = fractionDigits(u, prec);
    out = `${int}${frac}${unit}`;
  } else {
    const [frac, seconds] = fractionDigits(u, 9);
    out = `${seconds % 60n}${frac}s`;
    const minutes = seconds / 60n;
    if (minutes > 0n) {
      out = `${minutes % 60n}m${out}`;
      const hours = minutes / 60n;
      if (hours > 0n) out = `${hours}h${out}`;
    }
  }
  return neg ? `-${out}` : out;
}

/**
 * Whole milliseconds, rounded down (towards -infinity), as a number for setTimeout and
 * setInterval; exact, since |ns / 1e6| < 2^53. Note that Node fires a timer whose delay exceeds
 * 2^31-1 ms (about 24.8 days) after 1 ms instead, so callers with long durations must clamp.
 */
export function durationToMs(ns: bigint): number {
  const ms = ns / 1_000_000n; // bigint division truncates towards zero
  return Number(ns < 0n && ms * 1_000_000n !== ns ? ms - 1n : ms);
}
