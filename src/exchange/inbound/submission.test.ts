import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import nodemailer from 'nodemailer';
import { eventually, exchangeDb, metric } from '../../../test/support/exchange-delivery.ts';
import { startSealOnStandIn, startStandIn, type StandIn } from '../../../test/support/seal.ts';
import { SEALPOST_BIN } from '../../../test/support/sealpost-process.ts';
import { startServiceForTest, type ServiceUnderTest } from '../../../test/support/services.ts';
import { SmtpTalk } from '../../../test/support/smtp-talk.ts';
import { startSmtpSink, type SmtpSink } from '../../../test/support/smtp-sink.ts';
import { createTestCertificate, type TestCertificate } from '../../../test/support/tls.ts';
import { RuleStore } from '../rules/store.ts';
import { exchangeService } from '../service.ts';
import { htpasswdLine, readUsersFile, UsersFileError } from './submission-policy.ts';

const run = promisify(execFile);
/** "Outside": the allowed networks are 127.0.0.1/32 only, and these clients connect from 127.0.0.2. */
const OUTSIDE = '127.0.0.2';
const RELAY = { user: 'mta-relay', pass: 'relay-password-1' };
const APACHE = { user: 'written-by-htpasswd', pass: 'apache-password-2' };
const plain = (user: string, pass: string) => Buffer.from(`\0${user}\0${pass}`).toString('base64');

describe('the SMTP door: who may submit, and RFC 5321 answers', () => {
  let dir: string;
  let cert: TestCertificate;
  let sink: SmtpSink;
  let ipfs: StandIn;
  let seal: ServiceUnderTest;
  let exchange: ServiceUnderTest;
  let port: number;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sealpost-submission-'));
    cert = await createTestCertificate();
    // One account written by `sealpost smtp-user add` (password on standard input), one by Apache's htpasswd -B.
    const ours = await new Promise<string>((resolve, reject) => {
      const child = execFile(process.execPath, [SEALPOST_BIN, 'smtp-user', 'add', RELAY.user], (error, stdout) =>
        error ? reject(error) : resolve(stdout),
      );
      child.stdin!.end(`${RELAY.pass}\n`);
    });
    assert.match(ours, /^mta-relay:\$2y\$10\$[./A-Za-z0-9]{53}\n$/);
    const { stdout: apache } = await run('htpasswd', ['-B', '-b', '-n', APACHE.user, APACHE.pass]);
    await writeFile(join(dir, 'users'), `# SMTP AUTH accounts\n${ours}${apache.trim()}\n`);

    sink = await startSmtpSink();
    ipfs = await startStandIn();
    seal = await startSealOnStandIn(ipfs);
    exchange = await startServiceForTest(exchangeService, {
      env: {
        INBOUND_SMTP_TLS: 'true',
        INBOUND_SMTP_TLS_PUBLIC_KEY: cert.certPath,
        INBOUND_SMTP_TLS_PRIVATE_KEY: cert.keyPath,
        INBOUND_SMTP_ALLOWED_NETWORKS: '127.0.0.1/32',
        INBOUND_SMTP_USERS_FILE: join(dir, 'users'),
        INBOUND_SMTP_SENDER_DOMAINS: 'org.test',
        SMTP_HOSTNAME: 'mx.org.test',
        SEAL_URL: seal.url,
        OUTBOUND_SMTP_URL: sink.url,
        DELIVERY_POLL_INTERVAL: '50ms',
        // Rules are deleted behind the service's back here: MAIL FROM asks PostgreSQL each time.
        SMTP_RULE_CACHE_TTL: '0s',
      },
    });
    port = Number(new URL(exchange.service.listening.smtp!).port);
    const rules = new RuleStore(exchangeDb(exchange));
    await rules.create({
      name: 'seal the sealed sender',
      priority: 1,
      configuration: { params: { channel: 'smtp', sender: 'sealed@org.test' }, outbound: ['seal'] },
    });
    await rules.create({
      name: 'relay the rest',
      priority: 2,
      configuration: { params: { channel: 'smtp' }, outbound: ['smtp'] },
    });
  });
  after(async () => {
    await exchange?.stop();
    await seal?.stop();
    await ipfs?.close();
    await sink?.close();
    await cert?.remove();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const envelopeCount = async () => (await exchangeDb(exchange).selectFrom('envelopes').select('id').execute()).length;
  const sealedCount = async () =>
    (await seal.database.db.withSchema('seal').selectFrom('sealed_messages').select('id').execute()).length;

  async function session(from = '127.0.0.1') {
    const { talk, greeting } = await SmtpTalk.open(port, '127.0.0.1', from);
    assert.match(greeting, /^220 /);
    return talk;
  }
  /** EHLO, MAIL FROM, RCPT TO(s), DATA with `body`: the replies. Stops at the first refusal. */
  async function transaction(talk: SmtpTalk, from: string, to: string[], body: string): Promise<string[]> {
    const replies = [await talk.send(`MAIL FROM:<${from}>`)];
    if (!replies[0]!.startsWith('250')) return replies;
    for (const rcpt of to) replies.push(await talk.send(`RCPT TO:<${rcpt}>`));
    replies.push(await talk.send('DATA'));
    talk.write(`${body.replace(/\n/g, '\r\n')}\r\n.\r\n`);
    replies.push(await talk.reply());
    return replies;
  }

  describe('who may submit', () => {
    it('refuses clients off the allowed networks: 530 5.7.0 at MAIL FROM; none stored, sealed, relayed', async () => {
      const [envelopes, sealed, relayed] = [await envelopeCount(), await sealedCount(), sink.messages.length];
      const refusedBefore = await metric(exchange, 'smtp_refused_total', { reason: 'not_allowed' });
      const talk = await session(OUTSIDE);
      try {
        const ehlo = await talk.send('EHLO client.example');
        assert.match(ehlo, /STARTTLS/);
        assert.doesNotMatch(ehlo, /AUTH/, 'AUTH is not offered before STARTTLS');
        assert.equal(await talk.send('MAIL FROM:<alice@org.test>'), '530 5.7.0 Authentication required');
        assert.match(await talk.send('RCPT TO:<victim@external.example>'), /^503 /, 'no transaction to add to');
      } finally {
        talk.close();
      }
      assert.deepEqual(
        [await envelopeCount(), await sealedCount(), sink.messages.length],
        [envelopes, sealed, relayed],
      );
      assert.equal(await metric(exchange, 'smtp_refused_total', { reason: 'not_allowed' }), refusedBefore + 1);
      assert.ok(
        exchange.logs.some(
          (line) =>
            line.msg?.toString().includes('outside INBOUND_SMTP_ALLOWED_NETWORKS') && line.client === '127.0.0.2',
        ),
      );
    });

    it('refuses AUTH in clear with 538 5.7.11', async () => {
      const talk = await session(OUTSIDE);
      try {
        await talk.send('EHLO client.example');
        assert.equal(
          await talk.send(`AUTH PLAIN ${plain(RELAY.user, RELAY.pass)}`),
          '538 5.7.11 Encryption required: STARTTLS first, then AUTH',
        );
      } finally {
        talk.close();
      }
    });

    it('takes the same client once authenticated after STARTTLS (swaks --auth), and seals its message', async () => {
      const sealed = await sealedCount();
      const { stdout } = await run('swaks', [
        '--server',
        '127.0.0.1',
        '--port',
        String(port),
        '--local-interface',
        OUTSIDE,
        '--tls',
        '--auth',
        'PLAIN',
        '--auth-user',
        RELAY.user,
        '--auth-password',
        RELAY.pass,
        '--from',
        'sealed@org.test',
        '--to',
        'bob@rcpt.example',
        '--header',
        'From: Sealed Sender <sealed@org.test>',
        '--header',
        'Subject: authenticated',
        '--body',
        'Hello over STARTTLS and AUTH.',
      ]);
      assert.match(stdout, /<~ {2}235 /, 'AUTH PLAIN accepted');
      assert.match(stdout, /<~ {2}250 2\.6\.0 Ok: queued as /);
      await eventually('the message sealed', sealedCount, (count) => count === sealed + 1);
    });

    it('takes an account written by htpasswd -B too, with AUTH LOGIN over STARTTLS (nodemailer)', async () => {
      const transport = nodemailer.createTransport({
        host: '127.0.0.1',
        port,
        secure: false,
        requireTLS: true,
        localAddress: OUTSIDE,
        name: 'client.example',
        auth: { type: 'login', user: APACHE.user, pass: APACHE.pass },
        tls: { ca: [cert.cert], servername: 'localhost' },
      });
      const info = await transport.sendMail({
        from: 'carol@org.test',
        to: 'dave@rcpt.example',
        subject: 'login',
        text: 'by LOGIN',
      });
      assert.match(info.response, /^250 2\.6\.0 /);
      transport.close();
    });

    it('answers 535 5.7.8 to each wrong password, and closes the connection with 421 4.7.0 at the sixth', async () => {
      const talk = await session(OUTSIDE);
      try {
        await talk.send('EHLO client.example');
        assert.match(await talk.startTls(cert.cert), /^220 /);
        const ehlo = await talk.send('EHLO client.example');
        assert.match(ehlo, /AUTH PLAIN LOGIN/, 'AUTH is offered after STARTTLS');
        for (let i = 1; i <= 5; i++) {
          assert.equal(
            await talk.send(`AUTH PLAIN ${plain(RELAY.user, `wrong-${i}`)}`),
            '535 5.7.8 Authentication credentials invalid',
            `attempt ${i}`,
          );
        }
        assert.equal(
          await talk.send(`AUTH PLAIN ${plain(RELAY.user, 'wrong-6')}`),
          '421 4.7.0 Too many failed authentication attempts; closing the connection',
        );
        await talk.closedByServer();
      } finally {
        talk.close();
      }
      const failures = exchange.logs.filter((line) => line.msg === 'SMTP AUTH failed');
      assert.ok(failures.length >= 5 && failures.every((line) => line.user === RELAY.user && line.client === OUTSIDE));
      assert.ok(!JSON.stringify(exchange.logs).includes('wrong-3'), 'passwords are never logged');
    });

    it('550 5.7.1 to senders outside INBOUND_SMTP_SENDER_DOMAINS, a forged From after DATA; none stored', async () => {
      const envelopes = await envelopeCount();
      const relayed = sink.messages.length;
      const talk = await session();
      try {
        await talk.send('EHLO mta.org.test');
        assert.equal(
          await talk.send('MAIL FROM:<x@anywhere.example>'),
          '550 5.7.1 Sender <x@anywhere.example> is not in a domain this server takes mail from',
        );
        assert.equal(await talk.send('RSET'), '250 2.0.0 Flushed');
        const replies = await transaction(
          talk,
          'alerts@mail.org.test',
          ['victim@external.example'],
          'From: "Your Bank Security" <security@bank.example>\nSubject: urgent\n\nClick here.',
        );
        assert.match(
          replies.at(-1)!,
          /^550 5\.7\.1 From: <security@bank\.example> is not in a domain this server takes mail from/,
        );
        // The null sender (the organisation's own bounces) stays allowed; a subdomain counts as the domain.
        const bounce = await transaction(
          talk,
          '',
          ['postmaster@rcpt.example'],
          'From: MAILER-DAEMON@mx.org.test\nSubject: bounce\n\nreport',
        );
        assert.match(bounce.at(-1)!, /^250 2\.6\.0 /);
      } finally {
        talk.close();
      }
      await eventually(
        'the bounce relayed',
        async () => sink.messages.length,
        (count) => count === relayed + 1,
      );
      assert.ok(!sink.messages.some((m) => m.raw.toString().includes('Click here')), 'the forged message went nowhere');
      // The bounce's row goes with its payload, whose deletion may wait a moment for the intake to go quiet.
      await eventually(
        'nothing left in the queue',
        async () => envelopeCount(),
        (count) => count === envelopes,
      );
    });

    it('stops start-up on a users file line that is not name:bcrypt-hash, naming the line', async () => {
      const file = join(dir, 'bad-users');
      await writeFile(file, `${htpasswdLine('good', 'pass')}\nplain:{SHA}abc\n`);
      await assert.rejects(
        readUsersFile(file),
        (error: Error) =>
          error instanceof UsersFileError && /bad-users line 2: expected name:bcrypt-hash/.test(error.message),
      );
    });
  });

  describe('RFC 5321 details (a client of the allowed networks)', () => {
    async function relayed(subject: string) {
      return eventually(
        `"${subject}" at the sink`,
        async () => sink.messages.find((m) => m.raw.toString().includes(`Subject: ${subject}`)),
        (m) => m !== undefined,
      );
    }

    it('accepts RCPT TO:<postmaster> without a domain, in any case, as postmaster@SMTP_HOSTNAME', async () => {
      const talk = await session();
      try {
        await talk.send('EHLO mta.org.test');
        const replies = await transaction(
          talk,
          'alice@org.test',
          ['PostMaster'],
          'From: alice@org.test\nSubject: to the postmaster\n\nhi',
        );
        assert.deepEqual(replies.slice(0, 3), [
          '250 2.1.0 Accepted',
          '250 2.1.5 Accepted',
          '354 End data with <CR><LF>.<CR><LF>',
        ]);
      } finally {
        talk.close();
      }
      assert.deepEqual((await relayed('to the postmaster'))!.to, ['postmaster@mx.org.test']);
    });

    it('refuses MAIL and RCPT parameters it did not advertise with 555 5.5.4 (DSN is not offered)', async () => {
      const talk = await session();
      try {
        const ehlo = await talk.send('EHLO mta.org.test');
        assert.doesNotMatch(ehlo, /DSN/);
        assert.equal(
          await talk.send('MAIL FROM:<alice@org.test> FOO=BAR'),
          '555 5.5.4 Parameter FOO is not supported here',
        );
        assert.equal(
          await talk.send('MAIL FROM:<alice@org.test> RET=HDRS'),
          '555 5.5.4 Parameter RET is not supported here',
        );
        assert.match(
          await talk.send('MAIL FROM:<alice@org.test> BODY=8BITMIME SIZE=100'),
          /^250 /,
          'advertised ones pass',
        );
        assert.equal(
          await talk.send('RCPT TO:<bob@rcpt.example> NOTIFY=NEVER'),
          '555 5.5.4 Parameter NOTIFY is not supported here',
        );
      } finally {
        talk.close();
      }
    });

    it('refuses a UTF-8 address without SMTPUTF8 with 553 5.6.7, and takes it with SMTPUTF8', async () => {
      const talk = await session();
      try {
        await talk.send('EHLO mta.org.test');
        assert.match(await talk.send('MAIL FROM:<jürgen@org.test>'), /^553 5\.6\.7 /);
        assert.match(await talk.send('MAIL FROM:<alice@org.test>'), /^250 /);
        assert.match(await talk.send('RCPT TO:<jürgen@rcpt.example>'), /^553 5\.6\.7 /);
        assert.equal(await talk.send('RSET'), '250 2.0.0 Flushed');
        assert.match(await talk.send('MAIL FROM:<jürgen@org.test> SMTPUTF8'), /^250 /);
        assert.match(await talk.send('RCPT TO:<jürgen@rcpt.example>'), /^250 /);
      } finally {
        talk.close();
      }
    });

    it('keeps local parts as written: <UPPER@dest.test>, <upper@dest.test> are two; domains ignore case', async () => {
      // The sink (smtp-server too) would merge them itself: the RCPT commands it receives are recorded instead.
      const rcpts: string[] = [];
      sink.failWith = (recipient) => {
        if (recipient.endsWith('@dest.test')) rcpts.push(recipient);
        return undefined;
      };
      const talk = await session();
      try {
        await talk.send('EHLO mta.org.test');
        const replies = await transaction(
          talk,
          'alice@ORG.TEST',
          ['UPPER@dest.test', 'upper@DEST.test'],
          'From: alice@org.test\nSubject: two cases\n\nhi',
        );
        assert.match(replies.at(-1)!, /^250 2\.6\.0 /);
      } finally {
        talk.close();
      }
      await relayed('two cases');
      sink.failWith = undefined;
      assert.deepEqual(rcpts, ['UPPER@dest.test', 'upper@dest.test'], 'relayed to both, each as written');
    });

    it('accepts a quoted local part', async () => {
      const talk = await session();
      try {
        await talk.send('EHLO mta.org.test');
        const replies = await transaction(
          talk,
          '"quoted local"@org.test',
          ['"another one"@rcpt.example'],
          'From: "Q" <"quoted local"@org.test>\nSubject: quoted\n\nhi',
        );
        assert.match(replies[0]!, /^250 /);
        assert.match(replies.at(-1)!, /^250 2\.6\.0 /);
      } finally {
        talk.close();
      }
      // The envelope as stored (the test sink, smtp-server too, cannot parse a quoted local part with a space).
      const envelope = await exchangeDb(exchange)
        .selectFrom('envelopes')
        .select(['sender', 'recipients'])
        .where('sender', '=', '"quoted local"@org.test')
        .executeTakeFirst();
      assert.deepEqual(envelope, { sender: '"quoted local"@org.test', recipients: ['"another one"@rcpt.example'] });
    });

    it('answers "no rule" at MAIL FROM with 451 4.3.0, before the body is sent', async () => {
      const db = exchangeDb(exchange);
      const rules = await db.selectFrom('rules').selectAll().execute();
      await db.deleteFrom('rules').execute();
      try {
        const talk = await session();
        try {
          await talk.send('EHLO mta.org.test');
          assert.match(await talk.send('MAIL FROM:<alice@org.test>'), /^451 4\.3\.0 No delivery rule exists yet/);
        } finally {
          talk.close();
        }
      } finally {
        await db.insertInto('rules').values(rules).execute();
      }
    });
  });
});
