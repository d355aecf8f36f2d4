import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { htpasswdLine } from '../exchange/inbound/submission-policy.ts';

/**
 * `sealpost smtp-user add NAME`: prints the htpasswd line of an SMTP AUTH account (bcrypt, as
 * `htpasswd -B` writes it) to append to INBOUND_SMTP_USERS_FILE, so an operator needs no other tool.
 * On a terminal the password is asked for twice without echo; otherwise it is the first line of
 * standard input.
 */
export async function smtpUserAdd(name: string): Promise<number> {
  let password: string;
  try {
    password = process.stdin.isTTY ? await askTwice() : await firstLine();
  } catch (error) {
    process.stderr.write(`sealpost smtp-user: ${(error as Error).message}\n`);
    return 1;
  }
  if (password.length < 8) {
    process.stderr.write('sealpost smtp-user: the password must have at least 8 characters\n');
    return 1;
  }
  try {
    process.stdout.write(`${htpasswdLine(name, password)}\n`);
  } catch (error) {
    process.stderr.write(`sealpost smtp-user: ${(error as Error).message}\n`);
    return 1;
  }
  return 0;
}

async function firstLine(): Promise<string> {
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    lines.close();
    return line;
  }
  throw new Error('no password on standard input');
}

async function askTwice(): Promise<string> {
  const first = await ask('Password: ');
  const second = await ask('Password again: ');
  if (first !== second) throw new Error('the two passwords differ');
  return first;
}

/** A prompt whose answer is not echoed (readline's output muted while the password is typed). */
function ask(prompt: string): Promise<string> {
  return new Promise((resolve) => {
    let muted = false;
    const output = new Writable({
      write(chunk: Buffer, _encoding, done) {
        if (!muted) process.stderr.write(chunk);
        done();
      },
    });
    const rl = createInterface({ input: process.stdin, output, terminal: true });
    rl.question(prompt, (answer) => {
      rl.close();
      process.stderr.write('\n');
      resolve(answer);
    });
    muted = true;
  });
}
