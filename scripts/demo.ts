// `npm run demo`: Sealpost on its embedded defaults, one sample sealed email, and the two things a
// newcomer needs to try it in a browser: the reader link and (from the `log` SMS provider) the code.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createTransport } from 'nodemailer';

const RECIPIENT = 'reader@demo.example';
const MOBILE = '+41791234567';
const smtpPort = Number(process.env.INBOUND_SMTP_PORT ?? 2525);
const host = process.env.HOST ?? '127.0.0.1';

const say = (text: string) => process.stdout.write(`\n\x1b[1m==> ${text}\x1b[0m\n`);

const child = spawn(process.execPath, [fileURLToPath(new URL('../bin/sealpost.js', import.meta.url)), 'start', 'all'], {
  env: { LOG_LEVEL: 'info', ...process.env, LOG_FORMAT: 'json' },
  // JSON logs on stdout, read here; the banner on stderr (kept out of the JSON stream), shown as it is.
  stdio: ['ignore', 'pipe', 'pipe'],
});
const stop = () => child.kill('SIGTERM');
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
child.on('exit', (code) => process.exit(code ?? 0));

let sent = false;
void (async () => {
  for await (const line of createInterface({ input: child.stderr! })) {
    process.stdout.write(`${line}\n`);
    if (line.startsWith('Sealpost is running.') && !sent) {
      sent = true;
      // After the rest of the banner has been printed.
      setTimeout(
        () => void sendSample().catch((error: unknown) => say(`Could not send the sample email: ${String(error)}`)),
        200,
      );
    }
  }
})();
for await (const line of createInterface({ input: child.stdout! })) {
  // biome-ignore lint/suspicious/noExplicitAny: a JSON log line of any shape
  let entry: Record<string, any> | undefined;
  try {
    entry = line.startsWith('{') ? JSON.parse(line) : undefined;
  } catch {
    entry = undefined;
  }
  if (!entry) {
    process.stdout.write(`${line}\n`);
    continue;
  }
  // Only the line that carries a link: a visit to the banner's template link (`/m/{id}`) logs "reader link
  // with an id that cannot be a message", which has none.
  if (typeof entry.link === 'string' && entry.msg?.startsWith('reader link for')) {
    say(`A sealed message is waiting. Open ${entry.link} in your browser.`);
    process.stdout.write(`    Sign in as ${RECIPIENT} with the mobile number ${MOBILE}; the code appears here.\n`);
  } else if (entry.smsText || entry.emailText) {
    say(`SMS to ${entry.smsTo ?? entry.emailTo}: "${entry.smsText ?? entry.emailText}"`);
  } else if (entry.level >= 50) {
    process.stdout.write(`${line}\n`);
  }
}

async function sendSample(): Promise<void> {
  const transport = createTransport({ host, port: smtpPort, secure: false, ignoreTLS: true });
  await transport.sendMail({
    from: 'Demo Sender <sender@demo.example>',
    to: RECIPIENT,
    subject: 'Your first sealed message',
    text:
      'Hello! This message was sealed by Sealpost: encrypted, stored on IPFS and pinned.\n\n' +
      'Reply to it, with a file if you like.',
    html:
      '<p>Hello! This message was <b>sealed</b> by Sealpost: encrypted, stored on IPFS and pinned.</p>' +
      '<p>Reply to it, with a file if you like.</p>',
    headers: { 'X-Sealpost-Mobile': `${RECIPIENT}=${MOBILE}` },
    attachments: [{ filename: 'hello.txt', content: 'A small attachment.\n' }],
  });
  transport.close();
  say(`Sent a sample email to ${RECIPIENT} through smtp://${host}:${smtpPort}; sealing it...`);
}
