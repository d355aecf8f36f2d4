import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { createHttpServer } from './http.ts';
import { createLogger } from './logger.ts';
import { createRegistry } from './metrics.ts';

const silent = new Writable({ write: (_chunk, _encoding, done) => done() });

/** Bytes the server sent on `socket` until it closed it. */
function received(socket: Socket): Promise<string> {
  let text = '';
  socket.on('data', (chunk) => (text += chunk));
  return once(socket, 'close').then(() => text);
}

describe('a graceful stop of an HTTP service', () => {
  // Run even when the test times out (the stop hangs), so that the file still ends.
  const sockets: Socket[] = [];
  let server: { closeAllConnections(): void; close(): void } | undefined;
  after(() => {
    for (const socket of sockets) socket.destroy();
    server?.closeAllConnections();
    server?.close();
  });

  // Long idle timeout: nothing but the stop may close these connections within the test's time.
  it('closes unused and idle connections at once, and one being answered after its answer', {
    timeout: 10_000,
  }, async () => {
    const app = await createHttpServer({
      service: 'test',
      title: 'test',
      description: 'test',
      logger: createLogger({ level: 'fatal' }, silent),
      registry: createRegistry('test'),
      readiness: {},
      limits: { idleTimeoutMs: 600_000, maxConnections: 100 },
    });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let handling!: () => void;
    const handled = new Promise<void>((resolve) => (handling = resolve));
    app.get('/slow', async () => {
      handling();
      await released;
      return { done: true };
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    server = app.server;
    const { port } = app.server.address() as { port: number };
    const open = async () => {
      const socket = connect(port, '127.0.0.1');
      sockets.push(socket);
      await once(socket, 'connect');
      return socket;
    };

    const unused = await open();
    const unusedClosed = received(unused);
    const idle = await open();
    const idleClosed = received(idle);
    idle.write('GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n');
    await once(idle, 'data'); // answered; the connection stays open for the next request
    const busy = await open();
    const busyClosed = received(busy);
    busy.write('GET /slow HTTP/1.1\r\nHost: test\r\n\r\n');
    await handled;

    let stopped = false;
    const stopping = app.close().then(() => (stopped = true));
    assert.equal(await unusedClosed, '', 'the unused connection is closed without a word');
    await idleClosed;
    assert.equal(stopped, false, 'the stop waits for the request being answered');
    release();
    assert.match(await busyClosed, /^HTTP\/1\.1 200 [\s\S]*\{"done":true\}$/, 'the request in flight is answered');
    await stopping;
  });
});
