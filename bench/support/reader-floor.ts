// The least a reader's GET can do on this stack, as one process: an HTTP server that, for each request, asks
// PostgreSQL for the sealed message's row (CID, wrapped key, SHA-256), unwraps the key, reads the ciphertext
// from the cluster's IPFS proxy, decrypts and checks the hash, parses the MIME message as the reader does
// (readMessage, mailparser) and answers that view as JSON. Sealpost splits that work between two services
// (auth and seal) and does more (the session, the seal's record, two HTTP hops); bench/reader.ts forks this
// process, sets it up over IPC (`{ setup }`, answered with `{ port }`) and reads from it in turns with the
// bare read and Sealpost, so that a run shows how far above the bare read the necessary work itself is.
import { createHash } from 'node:crypto';
import { Agent, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { readMessage } from '../../src/auth/message/read.ts';
import { singleKeyring } from '../../src/seal/crypto/environment-key.ts';
import { messageKeyLabel } from '../../src/seal/crypto/secret-box.ts';
import { catDecrypted } from './cat-decrypt.ts';

export interface ReaderFloorSetup {
  databaseUrl: string;
  masterKey: string;
  /** The primary cluster's IPFS proxy, e.g. http://127.0.0.1:9095, and its Basic authorization. */
  proxyUrl: string;
  authorization: string;
}

const agent = new Agent({ keepAlive: true });
let pool: pg.Pool | undefined;

const ROW = {
  name: 'reader-floor-row',
  text: 'select cid, wrapped_key, sha256 from seal.sealed_messages where id = $1',
};

/** The decrypted message, its SHA-256 checked against the row's. */
async function readSealed(setup: ReaderFloorSetup, cid: string, key: Buffer, sha256: string): Promise<Buffer> {
  const hash = createHash('sha256');
  const chunks: Buffer[] = [];
  await catDecrypted(
    `${setup.proxyUrl}/api/v0/cat?arg=${cid}`,
    { agent, authorization: setup.authorization, key },
    (chunk) => {
      hash.update(chunk);
      chunks.push(chunk);
    },
  );
  // As the seal service checks it: the record's hex digest.
  if (hash.digest('hex') !== sha256) throw new Error('the content does not match its SHA-256');
  return Buffer.concat(chunks);
}

function serve(setup: ReaderFloorSetup): Promise<number> {
  const keyring = singleKeyring(Buffer.from(setup.masterKey, 'hex'));
  pool = new pg.Pool({ connectionString: setup.databaseUrl, max: 2 });
  const server = createServer((req, res) => {
    const id = req.url!.slice('/message/'.length);
    void (async () => {
      const { rows } = await pool!.query<{ cid: string; wrapped_key: string; sha256: string }>({
        ...ROW,
        values: [id],
      });
      const row = rows[0]!;
      const key = keyring.unwrap(row.wrapped_key, messageKeyLabel(id));
      const body = Buffer.from(JSON.stringify(await readMessage(await readSealed(setup, row.cid, key, row.sha256))));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length }).end(body);
    })().catch((error: unknown) => {
      res.writeHead(500).end(String(error));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

process.on('message', (message: { setup: ReaderFloorSetup }) => {
  serve(message.setup).then(
    (port) => process.send!({ port }),
    (error: unknown) => process.send!({ error: String(error) }),
  );
});
process.on('disconnect', () => {
  agent.destroy();
  void pool?.end();
  process.exit(0);
});
