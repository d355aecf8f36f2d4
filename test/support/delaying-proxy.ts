import { createConnection, createServer, type Socket } from 'node:net';

export interface DelayingProxy {
  /** The proxy's address: `http://127.0.0.1:<port>` for an HTTP server behind it. */
  url: string;
  close(): Promise<void>;
}

/**
 * A TCP proxy on 127.0.0.1 that holds what a client sends for `delayMs` before passing it on to `target`, and
 * passes the answers back at once: a slow network to a store, so that its writes take that much longer than
 * the database's. When the client goes away (killed), what it sent and the proxy still holds is dropped and
 * the connection to the target is reset, as a network would lose it: the target never sees the request
 * whole. Written here because no test tool does exactly that (a delay on one direction, nothing delivered
 * after the sender's death); toxiproxy and tc would need a daemon or root.
 */
export async function startDelayingProxy(
  target: { host: string; port: number },
  delayMs: number,
): Promise<DelayingProxy> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection(target);
    sockets.add(client);
    sockets.add(upstream);
    const timers = new Set<NodeJS.Timeout>();
    const drop = () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      client.destroy();
      upstream.resetAndDestroy();
    };
    client.on('data', (chunk) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        upstream.write(chunk);
      }, delayMs);
      timers.add(timer);
    });
    client.on('close', drop);
    client.on('error', drop);
    upstream.on('data', (chunk) => client.write(chunk));
    upstream.on('close', () => client.destroy());
    upstream.on('error', () => client.destroy());
    for (const socket of [client, upstream]) socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the proxy has no TCP address');
  return {
    url: `http://127.0.0.1:${address.port}`,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
