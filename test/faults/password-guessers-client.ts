import { readFileSync } from 'node:fs';
import { SmtpTalk } from '../support/smtp-talk.ts';

/**
 * Password guessers in a process of their own, as they would be on other hosts: their own TLS handshakes
 * and reads must not run on the server's event loop, or the test would measure the guessers' work, not
 * the server's. Usage: `node --import tsx password-guessers-client.ts PORT CA_FILE GUESSERS`; prints
 * `answered N` after each refused password, until it is killed.
 *
 * Each guesser tries one password per connection from ever new addresses (127.1.g.n, loopback too): a
 * botnet, which the per-address failure memory and its delays do not slow, so the checks queue up and the
 * server's hashing never rests. Known and unknown names alternate.
 */
const [port, caFile, guessers] = [Number(process.argv[2]), process.argv[3]!, Number(process.argv[4])];
const ca = readFileSync(caFile, 'utf8');
const plain = (user: string, pass: string) => Buffer.from(`\0${user}\0${pass}`).toString('base64');
let answered = 0;

async function guesser(g: number): Promise<never> {
  for (let n = 0; ; n++) {
    const from = `127.1.${g}.${(n % 250) + 1}`;
    let talk: SmtpTalk | undefined;
    try {
      const opened = await SmtpTalk.open(port, '127.0.0.1', from);
      talk = opened.talk;
      if (!opened.greeting.startsWith('220')) continue;
      await talk.send('EHLO guesser.example');
      await talk.startTls(ca);
      await talk.send('EHLO guesser.example');
      const user = n % 2 === 0 ? 'mta-relay' : `nobody-${g}-${n}`;
      if ((await talk.send(`AUTH PLAIN ${plain(user, `guess-${g}-${n}`)}`)).startsWith('535')) {
        process.stdout.write(`answered ${++answered}\n`);
      }
    } catch {
      // A connection the server cut: the next address.
    } finally {
      talk?.close();
    }
  }
}

for (let g = 0; g < guessers; g++) void guesser(g);
