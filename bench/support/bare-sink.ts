// The ceiling for Node.js: a bare smtp-server that reads each message and throws it away.
// Run as its own process so it gets a core of its own like Sealpost does: `bare-sink.ts PORT`.
import { SMTPServer } from 'smtp-server';
import { BARE_SMTP_OPTIONS } from './bare-smtp-options.ts';

const port = Number(process.argv[2]);
const server = new SMTPServer({
  ...BARE_SMTP_OPTIONS,
  onData(stream, _session, callback) {
    stream.on('data', () => {});
    stream.on('end', () => callback(null, 'Ok: discarded'));
  },
});
server.listen(port, '127.0.0.1', () => process.stdout.write('ready\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
