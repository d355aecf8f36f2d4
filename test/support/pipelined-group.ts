// A client for the tests of pipelined replies, run as its own process:
//   node --import tsx test/support/pipelined-group.ts PORT [MARKER]
// It says EHLO, sends MAIL FROM, RCPT TO and DATA in one write (RFC 2920), and prints as JSON the chunks in
// which the three replies arrived, then leaves; with MARKER, it first creates that file, so that the server's
// process can tell that 354 reached the client. In its own process its reads run while the server writes, as
// a remote client's would; in the server's process they would wait for the server's turn to end and so
// always see the replies together.
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';

const marker = process.argv[3];
const socket = connect(Number(process.argv[2]), '127.0.0.1');
const chunks: string[] = [];
let stage: 'greeting' | 'ehlo' | 'group' = 'greeting';
let received = '';
socket.on('data', (chunk: Buffer) => {
  received += chunk.toString('utf8');
  if (stage === 'greeting' && /^220 .*\r\n$/m.test(received)) {
    stage = 'ehlo';
    received = '';
    socket.write('EHLO client.test\r\n');
  } else if (stage === 'ehlo' && /^250 .*\r\n$/m.test(received)) {
    stage = 'group';
    received = '';
    socket.write('MAIL FROM:<alice@example.com>\r\nRCPT TO:<bob@example.com>\r\nDATA\r\n');
  } else if (stage === 'group') {
    chunks.push(chunk.toString('utf8'));
    if (received.split('\r\n').length > 3) {
      if (marker) writeFileSync(marker, received);
      process.stdout.write(JSON.stringify(chunks));
      socket.destroy();
    }
  }
});
socket.setTimeout(10_000, () => {
  process.stderr.write(`no three replies after 10 s; received ${JSON.stringify(received)}\n`);
  process.exit(1);
});
