// The floor of a durable intake on this stack: a bare smtp-server that, for each message, stores the payload
// through the kernel's object store (the same driver and settings as Sealpost's) and commits one row to
// PostgreSQL, the two at the same time, and answers 250 once both are done. The rows of concurrent messages
// go in one statement and one commit, as Sealpost's do (the kernel's Batcher, with the envelope writer's
// settings): one statement per message would make the floor lower than what batching reaches, 13-22 % at 8
// and 32 connections. Nothing else: no policy, no rule, no status history, no log line, no second
// statement. Sealpost's intake does strictly more, so the ratio of this server to the bare one bounds what
// Sealpost's can reach with these two writes per message.
// Run as its own process, like the bare sink: `durable-sink.ts PORT DATABASE_URL DATA_DIR` (local disk), with
// S3_ENDPOINT, S3_BUCKET, S3_REGION, S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY set for S3.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { SMTPServer } from 'smtp-server';
import { Batcher } from '../../src/kernel/batcher.ts';
import { createLocalObjectStore, type ObjectStore } from '../../src/kernel/objects/index.ts';
import { BARE_SMTP_OPTIONS } from './bare-smtp-options.ts';

const [port, databaseUrl, dataDir] = process.argv.slice(2);
const env = process.env;
const store: ObjectStore = env.S3_BUCKET
  ? (await import('../../src/kernel/objects/s3.ts')).createS3ObjectStore({
      endpoint: env.S3_ENDPOINT,
      bucket: env.S3_BUCKET,
      region: env.S3_REGION ?? 'us-east-1',
      accessKeyId: env.S3_ACCESS_KEY_ID,
      secretAccessKey: env.S3_SECRET_ACCESS_KEY,
      forcePathStyle: true,
    })
  : createLocalObjectStore({ dir: dataDir! });

// As many connections as Sealpost's pool (DATABASE_POOL_MAX's default).
const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
await pool.query(`create table if not exists durable_sink (
  id uuid primary key, sender text not null, recipients text[] not null, payload_key text not null,
  size integer not null, received_at timestamptz not null default now())`);
interface Row {
  id: string;
  sender: string;
  recipients: string[];
  payload_key: string;
  size: number;
}
const INSERT = `insert into durable_sink (id, sender, recipients, payload_key, size)
  select * from jsonb_to_recordset($1::jsonb)
    as r(id uuid, sender text, recipients text[], payload_key text, size integer)`;
const rows = new Batcher<Row, void>(
  async (batch) => {
    await pool.query({ name: 'durable-sink-insert', text: INSERT, values: [JSON.stringify(batch)] });
    return batch.map(() => undefined);
  },
  { maxBatch: 200, maxConcurrent: 2 },
);

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
server.listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\n'));
process.on('SIGTERM', () => server.close(() => void pool.end().finally(() => process.exit(0))));
