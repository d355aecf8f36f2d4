// The reader benchmark's floor, as a process of its own: the ciphertext of a sealed message read from the
// cluster's IPFS proxy, decrypted and hashed, nothing kept. bench/reader.ts forks it and asks for rounds
// of reads over IPC (`{ reads: n }`, answered with each read's latency and this process's CPU), taking
// turns with its own GET /v1/message rounds: so the bare reads share the host's moments with Sealpost's,
// and neither side's client collects the other's garbage.
import { createHash } from 'node:crypto';
import { Agent } from 'node:http';
import { catDecrypted } from './cat-decrypt.ts';

export interface BareReadSetup {
  /** POST {url}: the proxy's /api/v0/cat of the sealed message's CID. */
  url: string;
  authorization: string;
  /** The message key, hex. */
  key: string;
}

export interface BareReadRound {
  latencies: number[];
  /** This process's CPU over the round, in ms. */
  cpuMs: number;
}

const agent = new Agent({ keepAlive: true });

/** A setup as the reads use it: the key decoded once. */
interface Prepared {
  url: string;
  authorization: string;
  key: Buffer;
}

function bareRead({ url, authorization, key }: Prepared): Promise<void> {
  const hash = createHash('sha256');
  return catDecrypted(url, { agent, authorization, key }, (chunk) => hash.update(chunk));
}

let prepared: Prepared | undefined;
process.on('message', (message: { setup?: BareReadSetup; reads?: number }) => {
  void (async () => {
    if (message.setup) {
      prepared = { ...message.setup, key: Buffer.from(message.setup.key, 'hex') };
      await bareRead(prepared); // warm-up
      process.send!({ ready: true });
      return;
    }
    const latencies: number[] = [];
    const cpu = process.cpuUsage();
    for (let i = 0; i < (message.reads ?? 0); i++) {
      const t = performance.now();
      await bareRead(prepared!);
      latencies.push(performance.now() - t);
    }
    const used = process.cpuUsage(cpu);
    process.send!({ latencies, cpuMs: (used.user + used.system) / 1000 } satisfies BareReadRound);
  })().catch((error: unknown) => {
    process.send!({ error: String(error) });
  });
});
process.on('disconnect', () => {
  agent.destroy();
  process.exit(0);
});
