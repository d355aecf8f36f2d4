import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type AuthDoor, startAuthDoor } from '../../../test/support/auth-door.ts';
import { SmtpTalk } from '../../../test/support/smtp-talk.ts';
import type { TestCertificate } from '../../../test/support/tls.ts';

/** Refusals timed per kind of name. */
const TRIES = 200;
/** Connections made ready (STARTTLS) at once, then used one after another for the timed AUTH. */
const BATCH = 20;
const plain = (user: string, pass: string) => Buffer.from(`\0${user}\0${pass}`).toString('base64');

/**
 * Welch's t statistic of two samples and its degrees of freedom (Welch-Satterthwaite): whether two means
 * differ when the variances may too.
 */
function welch(a: number[], b: number[]): { t: number; df: number } {
  const stats = (xs: number[]) => {
    const mean = xs.reduce((sum, x) => sum + x, 0) / xs.length;
    const variance = xs.reduce((sum, x) => sum + (x - mean) ** 2, 0) / (xs.length - 1);
    return { mean, se2: variance / xs.length };
  };
  const [x, y] = [stats(a), stats(b)];
  const se2 = x.se2 + y.se2;
  return {
    t: (x.mean - y.mean) / Math.sqrt(se2),
    df: se2 ** 2 / (x.se2 ** 2 / (a.length - 1) + y.se2 ** 2 / (b.length - 1)),
  };
}

/**
 * The two-sided critical value of Student's t at p = 0.01 for `df` degrees of freedom: the normal quantile
 * z(0.995) with the Cornish-Fisher terms for t (Abramowitz & Stegun 26.7.5), within 0.001 above 30 df.
 */
function criticalT(df: number): number {
  const z = 2.5758293035489;
  const g1 = (z ** 3 + z) / 4;
  const g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96;
  const g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384;
  return z + g1 / df + g2 / df ** 2 + g3 / df ** 3;
}

describe('SMTP AUTH timing', () => {
  let door: AuthDoor;
  let cert: TestCertificate;
  let port: number;

  before(async () => {
    // Cost 5: 400 checks stay quick; what matters is that both kinds of name cost the same.
    door = await startAuthDoor({ account: { user: 'known-user', pass: 'the-password', cost: 5 } });
    ({ port, cert } = door);
  });
  after(async () => {
    await door?.stop();
  });

  /** A connection from `from`, after STARTTLS and EHLO: ready for AUTH. */
  async function ready(from: string): Promise<SmtpTalk> {
    const { talk, greeting } = await SmtpTalk.open(port, '127.0.0.1', from);
    assert.match(greeting, /^220 /);
    await talk.send('EHLO client.example');
    await talk.startTls(cert.cert);
    await talk.send('EHLO client.example');
    return talk;
  }

  it('refuses known and unknown names in times a t-test over 200 tries of each cannot tell apart', async (t) => {
    // Known and unknown in a shuffled order, so that a drift of the host's load weighs on both alike. Each
    // try comes from an address of its own (127.3.x.y, loopback too), its first failure: no failure delay.
    const kinds = [...Array<'known'>(TRIES).fill('known'), ...Array<'unknown'>(TRIES).fill('unknown')];
    for (let i = kinds.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [kinds[i], kinds[j]] = [kinds[j]!, kinds[i]!];
    }
    const times = { known: [] as number[], unknown: [] as number[] };
    for (let start = 0; start < kinds.length; start += BATCH) {
      const batch = kinds.slice(start, start + BATCH);
      const talks = await Promise.all(
        batch.map((_, i) => ready(`127.3.${Math.floor((start + i) / 250)}.${((start + i) % 250) + 1}`)),
      );
      try {
        for (const [i, kind] of batch.entries()) {
          const user = kind === 'known' ? 'known-user' : `unknown-${start + i}`;
          const began = performance.now();
          const reply = await talks[i]!.send(`AUTH PLAIN ${plain(user, `wrong-${start + i}`)}`);
          times[kind].push(performance.now() - began);
          assert.equal(reply, '535 5.7.8 Authentication credentials invalid');
        }
      } finally {
        for (const talk of talks) talk.close();
      }
    }
    const { t: statistic, df } = welch(times.known, times.unknown);
    const critical = criticalT(df);
    const mean = (xs: number[]) => (xs.reduce((sum, x) => sum + x, 0) / xs.length).toFixed(2);
    const figures =
      `known ${mean(times.known)} ms, unknown ${mean(times.unknown)} ms on average; ` +
      `|t| = ${Math.abs(statistic).toFixed(2)}, critical ${critical.toFixed(3)} at p = 0.01 (${df.toFixed(0)} df)`;
    t.diagnostic(figures);
    assert.ok(Math.abs(statistic) < critical, figures);
  });
});
