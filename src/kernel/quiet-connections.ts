import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * A graceful stop closes the connections that carry no request, and each other one as soon as its answer
 * is out. Node's server.close() closes only the keep-alive connections its parser counts as idle: one a
 * client opened and never used (browsers open them ahead of need; undici's pool too) kept `sealpost`
 * from stopping until SHUTDOWN_TIMEOUT ended it with status 1. Requests being handled finish first.
 */
export function closeQuietConnectionsOnStop(app: FastifyInstance): void {
  const open = new Set<Socket>();
  const answering = new Set<Socket>();
  let stopping = false;
  app.server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => {
      open.delete(socket);
      answering.delete(socket);
    });
  });
  app.server.on('request', (request, response) => {
    const socket = request.socket;
    answering.add(socket);
    response.once('close', () => {
      answering.delete(socket);
      if (stopping) socket.end();
    });
  });
  app.addHook('preClose', async () => {
    stopping = true;
    for (const socket of open) if (!answering.has(socket)) socket.destroy();
  });
}
