import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { DurationError, durationToMs, formatDuration, isValidDuration, parseDuration } from './duration.ts';

const NS = 1n;
const US = 1_000n * NS;
const MS = 1_000n * US;
const S = 1_000n * MS;
const M = 60n * S;
const H = 60n * M;
const MAX = (1n << 63n) - 1n;
const MIN = -(1n << 63n);

/** Go's parseDurationTests (src/time/time_test.go), plus the spellings the brief names. */
const valid: ReadonlyArray<[string, bigint]> = [
  // simple
  ['0', 0n],
  ['5s', 5n * S],
  ['30s', 30n * S],
  ['1478s', 1478n * S],
  // sign
  ['-5s', -5n * S],
  ['+5s', 5n * S],
  ['-0', 0n],
  ['+0', 0n],
  // decimal
  ['5.0s', 5n * S],
  ['5.6s', 5n * S + 600n * MS],
  ['5.s', 5n * S],
  ['.5s', 500n * MS],
  ['1.0s', 1n * S],
  ['1.00s', 1n * S],
  ['1.004s', 1n * S + 4n * MS],
  ['1.0040s', 1n * S + 4n * MS],
  ['100.00100s', 100n * S + 1n * MS],
  // different units
  ['10ns', 10n * NS],
  ['11us', 11n * US],
  ['12\u00b5s', 12n * US], // micro sign
  ['12\u03bcs', 12n * US], // Greek mu
  ['13ms', 13n * MS],
  ['14s', 14n * S],
  ['15m', 15n * M],
  ['16h', 16n * H],
  // composite durations
  ['3h30m', 3n * H + 30n * M],
  ['10.5s4m', 4n * M + 10n * S + 500n * MS],
  ['-2m3.4s', -(2n * M + 3n * S + 400n * MS)],
  ['1h2m3s4ms5us6ns', 1n * H + 2n * M + 3n * S + 4n * MS + 5n * US + 6n * NS],
  ['39h9m14.425s', 39n * H + 9n * M + 14n * S + 425n * MS],
  // large value
  ['52763797000ns', 52763797000n * NS],
  // more than 9 digits after the decimal point (golang.org/issue/6617)
  ['0.3333333333333333333h', 20n * M],
  // 1<<53+1 cannot be stored precisely in a float64
  ['9007199254740993ns', (1n << 53n) + 1n],
  // largest duration representable in int64 nanoseconds
  ['9223372036854775807ns', MAX],
  ['9223372036854775.807us', MAX],
  ['9223372036s854ms775us807ns', MAX],
  ['9223372036854ms775us807ns', MAX],
  ['-9223372036854775808ns', MIN],
  ['-9223372036854775.808us', MIN],
  ['-9223372036s854ms775us808ns', MIN],
  // largest negative round trip value (golang.org/issue/48629)
  ['-2562047h47m16.854775808s', MIN],
  // huge string (golang.org/issue/15011): fraction digits past int64 precision are dropped
  ['0.100000000000000000000h', 6n * M],
  // the first overflow check in leadingFraction
  ['0.830103483285477580700h', 49n * M + 48n * S + 372539827n * NS],
  // fractions are truncated to the nanosecond, never rounded
  ['1.9999999999ns', 1n],
  ['0.5ns', 0n],
  ['1.0000000009s', 1n * S],
  ['-1.9999999999ns', -1n],
];

/** Go's parseDurationErrorTests, each with the full message Go produces. */
const invalid: ReadonlyArray<[string, string]> = [
  ['', 'time: invalid duration ""'],
  ['3', 'time: missing unit in duration "3"'],
  ['-', 'time: invalid duration "-"'],
  ['s', 'time: invalid duration "s"'],
  ['.', 'time: invalid duration "."'],
  ['-.', 'time: invalid duration "-."'],
  ['.s', 'time: invalid duration ".s"'],
  ['+.s', 'time: invalid duration "+.s"'],
  ['1d', 'time: unknown unit "d" in duration "1d"'],
  // Go's inputs here are raw bytes; a JS string holds code points, so "\x85" is U+0085 and is
  // quoted as its UTF-8 bytes, which is what Go prints for that character.
  ['\x85\x85', 'time: invalid duration "\\xc2\\x85\\xc2\\x85"'],
  ['\xffff', 'time: invalid duration "\\xc3\\xbfff"'],
  ['hello \xffff world', 'time: invalid duration "hello \\xc3\\xbfff world"'],
  ['\uFFFD', 'time: invalid duration "\\xef\\xbf\\xbd"'],
  ['\uFFFD hello \uFFFD world', 'time: invalid duration "\\xef\\xbf\\xbd hello \\xef\\xbf\\xbd world"'],
  // overflow
  ['9223372036854775810ns', 'time: invalid duration "9223372036854775810ns"'],
  ['9223372036854775808ns', 'time: invalid duration "9223372036854775808ns"'],
  ['-9223372036854775809ns', 'time: invalid duration "-9223372036854775809ns"'],
  ['9223372036854776us', 'time: invalid duration "9223372036854776us"'],
  ['3000000h', 'time: invalid duration "3000000h"'],
  ['9223372036854775.808us', 'time: invalid duration "9223372036854775.808us"'],
  ['9223372036854ms775us808ns', 'time: invalid duration "9223372036854ms775us808ns"'],
  // beyond Go's table
  ['1', 'time: missing unit in duration "1"'],
  ['1x', 'time: unknown unit "x" in duration "1x"'],
  ['5.', 'time: missing unit in duration "5."'],
  ['1h30', 'time: missing unit in duration "1h30"'],
  ['1d2h', 'time: unknown unit "d" in duration "1d2h"'], // the unit stops at the next digit
  ['1S', 'time: unknown unit "S" in duration "1S"'], // units are case-sensitive
  ['1\u00b5', 'time: unknown unit "\\xc2\\xb5" in duration "1\\xc2\\xb5"'],
  ['1"q', 'time: unknown unit "\\"q" in duration "1\\"q"'],
  [' 1s', 'time: invalid duration " 1s"'],
  ['1s ', 'time: unknown unit "s " in duration "1s "'],
  ['1 s', 'time: unknown unit " s" in duration "1 s"'],
  ['--1s', 'time: invalid duration "--1s"'],
  ['+-1s', 'time: invalid duration "+-1s"'],
  ['00', 'time: missing unit in duration "00"'],
  ['0.0', 'time: missing unit in duration "0.0"'],
  ['1s-1s', 'time: unknown unit "s-" in duration "1s-1s"'], // a sign only at the start
  ['99999999999999999999ns', 'time: invalid duration "99999999999999999999ns"'],
  ['2562048h', 'time: invalid duration "2562048h"'],
  ['2562047h47m16.854775808s', 'time: invalid duration "2562047h47m16.854775808s"'],
  ['-2562047h47m16.854775809s', 'time: invalid duration "-2562047h47m16.854775809s"'],
  ['-9223372036854ms775us809ns', 'time: invalid duration "-9223372036854ms775us809ns"'],
  // Go wraps its uint64 sum to 0 here and returns 0; we report the overflow instead.
  ['9223372036854775808ns9223372036854775808ns', 'time: invalid duration "9223372036854775808ns9223372036854775808ns"'],
];

/** Go's durationTests for Duration.String(). */
const formatted: ReadonlyArray<[string, bigint]> = [
  ['0s', 0n],
  ['1ns', 1n * NS],
  ['1.1\u00b5s', 1100n * NS],
  ['2.2ms', 2200n * US],
  ['3.3s', 3300n * MS],
  ['4m5s', 4n * M + 5n * S],
  ['4m5.001s', 4n * M + 5001n * MS],
  ['5h6m7.001s', 5n * H + 6n * M + 7001n * MS],
  ['8m0.000000001s', 8n * M + 1n * NS],
  ['2562047h47m16.854775807s', MAX],
  ['-2562047h47m16.854775808s', MIN],
];

describe('parseDuration', () => {
  for (const [text, want] of valid) {
    it(`parses ${JSON.stringify(text)} as ${want}ns`, () => {
      assert.equal(parseDuration(text), want);
    });
  }

  for (const [text, message] of invalid) {
    it(`rejects ${JSON.stringify(text)}`, () => {
      assert.throws(
        () => parseDuration(text),
        (err: unknown) => err instanceof DurationError && err.message === message,
      );
    });
  }

  it('throws a DurationError that is an Error named DurationError', () => {
    let caught: unknown;
    try {
      parseDuration('1x');
    } catch (err) {
      caught = err;
    }
    assert.ok(caught instanceof DurationError);
    assert.ok(caught instanceof Error);
    assert.equal(caught.name, 'DurationError');
  });
});

describe('the spec durations', () => {
  const spec: ReadonlyArray<[string, bigint, number]> = [
    ['15m', 15n * M, 900_000],
    ['336h', 336n * H, 1_209_600_000],
    ['1h', 1n * H, 3_600_000],
    ['30s', 30n * S, 30_000],
    ['60s', 60n * S, 60_000],
    ['1h30m', 90n * M, 5_400_000],
  ];
  for (const [text, ns, ms] of spec) {
    it(`${text} is ${ns}ns and ${ms}ms`, () => {
      assert.equal(parseDuration(text), ns);
      assert.equal(durationToMs(parseDuration(text)), ms);
      assert.equal(isValidDuration(text), true);
    });
  }
  it('60s formats in Go style as 1m0s', () => {
    assert.equal(formatDuration(parseDuration('60s')), '1m0s');
  });
});

describe('formatDuration', () => {
  for (const [want, ns] of formatted) {
    it(`formats ${ns}ns as ${want}`, () => {
      assert.equal(formatDuration(ns), want);
      if (ns > 0n) assert.equal(formatDuration(-ns), `-${want}`);
    });
  }

  it('uses the micro sign U+00B5, like Go', () => {
    assert.equal(formatDuration(1500n), '1.5\u00b5s');
    assert.notEqual(formatDuration(1500n), '1.5\u03bcs');
  });

  it('picks the unit at each sub-second boundary', () => {
    assert.equal(formatDuration(999n), '999ns');
    assert.equal(formatDuration(1000n), '1\u00b5s');
    assert.equal(formatDuration(999_999n), '999.999\u00b5s');
    assert.equal(formatDuration(1_000_000n), '1ms');
    assert.equal(formatDuration(999_999_999n), '999.999999ms');
    assert.equal(formatDuration(S), '1s');
    assert.equal(formatDuration(H), '1h0m0s');
    assert.equal(formatDuration(H + S), '1h0m1s');
  });

  it('rejects values outside int64', () => {
    assert.throws(() => formatDuration(MAX + 1n), RangeError);
    assert.throws(() => formatDuration(MIN - 1n), RangeError);
  });
});

describe('round trip: parseDuration(formatDuration(d)) === d', () => {
  const spread: bigint[] = [0n, 1n, -1n, MAX, MIN, MAX - 1n, MIN + 1n, 999n, 1000n, 999_999n];
  for (let p = 0n; p < 63n; p++) spread.push(1n << p, -(1n << p), (1n << p) - 1n);
  for (const unit of [US, MS, S, M, H]) spread.push(unit, unit + 1n, unit - 1n, -unit);

  it(`holds for ${spread.length} chosen values including min and max int64`, () => {
    for (const d of spread) assert.equal(parseDuration(formatDuration(d)), d, formatDuration(d));
  });

  it('holds for random int64 values', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: MIN, max: MAX }), (d) => parseDuration(formatDuration(d)) === d),
      { numRuns: 2000 },
    );
  });

  it("holds for random whole milliseconds (Go's TestParseDurationRoundTrip)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (n) => {
        const d = BigInt(n) * MS;
        return parseDuration(formatDuration(d)) === d;
      }),
      { numRuns: 500 },
    );
  });
});

describe('isValidDuration', () => {
  it('accepts what parseDuration accepts', () => {
    for (const [text] of valid) assert.equal(isValidDuration(text), true, text);
  });
  it('rejects what parseDuration rejects', () => {
    for (const [text] of invalid) assert.equal(isValidDuration(text), false, text);
  });
});

describe('durationToMs', () => {
  it('rounds down to whole milliseconds', () => {
    assert.equal(durationToMs(0n), 0);
    assert.equal(durationToMs(999_999n), 0);
    assert.equal(durationToMs(1_000_000n), 1);
    assert.equal(durationToMs(1_500_999_999n), 1500);
    assert.equal(durationToMs(-1n), -1);
    assert.equal(durationToMs(-1_000_000n), -1);
    assert.equal(durationToMs(-1_000_001n), -2);
  });
  it('is exact at the ends of int64', () => {
    assert.equal(durationToMs(MAX), 9_223_372_036_854);
    assert.equal(durationToMs(MIN), -9_223_372_036_855);
  });
});
