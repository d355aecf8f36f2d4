import { connect, createServer } from 'node:net';

/** Ports handed out in this process, so that two callers never get the same one. */
const handedOut = new Set<number>();

/**
 * A TCP port on 127.0.0.1 that nothing listens on right now, taken below Linux's ephemeral range
 * (32768-60999): a port from inside it could be taken, between this check and the server's listen, by
 * the source port of an outgoing connection (to PostgreSQL, say) or by a listener on port 0.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 12768);
    if (handedOut.has(port)) continue;
    if (await listens(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error('no free port found on 127.0.0.1 between 20000 and 32767');
}

function listens(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
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
