// The floor of a durable intake on this stack: a bare smtp-server that, for each message, stores the payload
// through the kernel's object store and commits one row to PostgreSQL, the two at the same time, and answers
// 250 once both are done. Its database and store are opened as a Sealpost process opens them (the shared
// configuration from the environment, openStores), and the rows of concurrent messages go in one prepared
// statement and one commit, as Sealpost's do (the kernel's Batcher, with the envelope writer's settings):
// one statement per message would make the floor lower than what batching reaches, 13-22 % at 8 and 32
// connections. Nothing else: no policy, no rule, no status history, no log line, no second statement.
// Sealpost's intake does strictly more, so the ratio of this server to the bare one bounds what Sealpost's
// can reach with these two writes per message.
// Run as its own process, like the bare sink: `durable-sink.ts PORT`, with DATABASE_URL, SEALPOST_DATA_DIR
// and, for S3, the S3_* variables in the environment, as for `sealpost start`.
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { SMTPServer } from 'smtp-server';
import { Batcher } from '../../src/kernel/batcher.ts';
import { loadSharedConfig } from '../../src/kernel/config.ts';
import { compileOnce } from '../../src/kernel/db/compile-once.ts';
import { INTAKE_BATCHES } from '../../src/exchange/inbound/envelope-writer.ts';
import { openStores } from '../../src/cli/start.ts';
import { BARE_SMTP_OPTIONS } from './bare-smtp-options.ts';

const problems: string[] = [];
const config = loadSharedConfig(process.env, problems);
if (problems.length > 0) throw new Error(problems.join('\n'));
const { database, objects } = await openStores(config, true);
const store = objects!;

await sql`create table if not exists durable_sink (
  id uuid primary key, sender text not null, recipients text[] not null, payload_key text not null,
  size integer not null, received_at timestamptz not null default now())`.execute(database.db);
interface Row {
  id: string;
  sender: string;
  recipients: string[];
  payload_key: string;
  size: number;
}
const insert = compileOnce(
  (rows: string) =>
    database.db
      .insertInto('durable_sink')
      .columns(['id', 'sender', 'recipients', 'payload_key', 'size'])
      .expression((eb) =>
        eb
          .selectFrom(
            sql`jsonb_to_recordset(${rows}::jsonb)`.as<'r'>(
              sql`r(id uuid, sender text, recipients text[], payload_key text, size integer)`,
            ),
          )
          .selectAll(),
      ),
  '["compile-once placeholder"]',
  { prepare: true },
);
const rows = new Batcher<Row, void>(async (batch) => {
  await database.db.executeQuery(insert(JSON.stringify(batch)));
  return batch.map(() => undefined);
}, INTAKE_BATCHES);

const server = new SMTPServer({
  ...BARE_SMTP_OPTIONS,
  onData(stream, session, callback) {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => {
      const bytes = Buffer.concat(chunks);
      const id = randomUUID();
      const key = `durable-sink/${id}`;
      const sender = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
      const recipients = session.envelope.rcptTo.map((rcpt) => rcpt.address);
      Promise.all([
        store.put(key, bytes),
        rows.submit({ id, sender, recipients, payload_key: key, size: bytes.length }),
      ]).then(
        () => callback(null, 'Ok: stored'),
        (error: Error) => callback(Object.assign(error, { responseCode: 451 })),
      );
    });
  },
});
server.listen(Number(process.argv[2]), '127.0.0.1', () => process.stdout.write('ready\n'));
process.on('SIGTERM', () => server.close(() => void database.close().finally(() => process.exit(0))));
