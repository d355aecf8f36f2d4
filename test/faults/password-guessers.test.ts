import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type AuthDoor, startAuthDoor } from '../support/auth-door.ts';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { TestCertificate } from '../support/tls.ts';
import { numberedMessage, sendOverSmtp, tally } from './smtp-senders.ts';

/** Clients guessing passwords at once (ten, whose checks on the intake's own thread once made a message take 14 s). */
const GUESSERS = 10;
/** Messages the allowed client sends in each measured run. */
const MESSAGES = 60;
/** Runs alone and with the guessers, alternated so that a change in the host's own load weighs on both alike. */
const ROUNDS = 3;

const GUESSER_PROCESS = fileURLToPath(new URL('./password-guessers-client.ts', import.meta.url));

/** The guessers (password-guessers-client.ts) in a process of their own; `stop()` kills it. */
function startGuessers(port: number, caFile: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', GUESSER_PROCESS, String(port), caFile, String(GUESSERS)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let answered = 0;
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    const last = /answered (\d+)\n$/.exec(text);
    if (last) answered = Number(last[1]);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    answered: () => answered,
    async stop() {
      child.kill();
      await exited;
    },
  };
}

describe('ten clients guessing SMTP passwords', () => {
  let door: AuthDoor;
  let cert: TestCertificate;
  let port: number;

  before(async () => {
    // Cost 10, what `sealpost smtp-user add` writes: each check is real work.
    door = await startAuthDoor({ account: { user: 'mta-relay', pass: 'the-right-password' } });
    ({ port, cert } = door);
  });
  after(async () => {
    await door?.stop();
  });

  /** The allowed client (127.0.0.1, no AUTH) sends MESSAGES one after another; how long they took. */
  async function sendAllowed(tag: string): Promise<number> {
    const started = performance.now();
    const sent = await sendOverSmtp({
      port,
      connections: 1,
      messages: Array.from({ length: MESSAGES }, (_, i) => numberedMessage(tag, i)),
    });
    const ms = performance.now() - started;
    assert.deepEqual(tally(sent), { queued: MESSAGES, refused: 0, unanswered: 0, unsent: 0 }, tag);
    return ms;
  }

  it("accepts an allowed client's messages, all of them, in under twice their time alone", async (t) => {
    await sendAllowed('warm-up');
    let alone = 0;
    let loaded = 0;
    let checksDuring = 0;
    for (let round = 0; round < ROUNDS; round++) {
      alone += await sendAllowed(`alone-${round}`);
      const guessers = startGuessers(port, cert.certPath);
      try {
        // The guessers are at it (their checks queued) before the measured messages start.
        const deadline = Date.now() + 30_000;
        while (guessers.answered() < GUESSERS && Date.now() < deadline) await sleep(20);
        const before = guessers.answered();
        loaded += await sendAllowed(`guessed-${round}`);
        checksDuring += guessers.answered() - before;
      } finally {
        await guessers.stop();
      }
    }
    const ratio = loaded / alone;
    const figures =
      `${ROUNDS} × ${MESSAGES} messages: alone ${alone.toFixed(0)} ms, with guessers ${loaded.toFixed(0)} ms ` +
      `(×${ratio.toFixed(2)}); ${checksDuring} wrong passwords answered meanwhile`;
    t.diagnostic(figures);
    // The guessers really were guessing throughout: at least 5 checks a second (cost 10: ~60-100 ms each).
    assert.ok(checksDuring >= (loaded / 1000) * 5, `the guessers kept the hashing busy: ${figures}`);
    assert.ok(ratio < 2, figures);
  });
});
