/**
 * `sealpost devstack ipfs-cluster --port 9094 --proxy-port 9095 --data DIR
 *  [--user U --pass P] [--host 127.0.0.1]`: runs the IPFS Cluster stand-in
 * until SIGINT/SIGTERM. The main CLI passes the arguments after the subcommand.
 */
import { parseArgs } from 'node:util';
import { startIpfsClusterStandIn } from './server.ts';

const USAGE =
  'usage: sealpost devstack ipfs-cluster --data DIR [--port 9094] [--proxy-port 9095] ' +
  '[--host 127.0.0.1] [--user U --pass P] [--peername NAME]';

function port(value: string | undefined, dflt: number, flag: string): number {
  if (value === undefined) return dflt;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`${flag}: not a port: ${value}\n${USAGE}`);
  return n;
}

/** Starts the stand-in from command-line arguments; resolves once it has stopped on SIGINT/SIGTERM. */
export async function runIpfsClusterStandIn(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      'proxy-port': { type: 'string' },
      data: { type: 'string' },
      host: { type: 'string' },
      user: { type: 'string' },
      pass: { type: 'string' },
      peername: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  if (!values.data) throw new Error(`--data is required\n${USAGE}`);
  if ((values.user === undefined) !== (values.pass === undefined)) {
    throw new Error(`--user and --pass go together\n${USAGE}`);
  }
  const standIn = await startIpfsClusterStandIn({
    host: values.host ?? '127.0.0.1',
    port: port(values.port, 9094, '--port'),
    proxyPort: port(values['proxy-port'], 9095, '--proxy-port'),
    dataDir: values.data,
    user: values.user,
    pass: values.pass,
    peerName: values.peername,
  });
  console.log(`IPFS Cluster stand-in: REST API ${standIn.url}, IPFS proxy ${standIn.proxyUrl}, data ${values.data}`);

  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      console.log(`${signal}: stopping the IPFS Cluster stand-in`);
      standIn.close().then(resolve, (err: unknown) => {
        console.error(err);
        resolve();
      });
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
