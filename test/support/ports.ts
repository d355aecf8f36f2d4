import { connect, createServer } from 'node:net';

/** A TCP port on 127.0.0.1 that nothing listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A port on 127.0.0.1 whose connections are refused, and stay refused: a privileged port that
 * nothing here listens on. A port taken from `freePort()` and closed again is not good enough for
 * "this peer is down": the next server the test starts on port 0 may be handed the same number.
 */
export async function refusedPort(): Promise<number> {
  for (const port of [1, 9, 47, 61, 113]) {
    const refused = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(false);
      });
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
    });
    if (refused) return port;
  }
  throw new Error('no refusing port found on 127.0.0.1');
}
