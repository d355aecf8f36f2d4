import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Counter } from 'prom-client';
import { errorObject } from './errors.ts';

export interface SlowClientLimits {
  /** HTTP_IDLE_TIMEOUT: a connection that sends nothing this long while we wait for it is answered 408 and closed. */
  idleTimeoutMs: number;
  /** HTTP_MAX_CONNECTIONS: connections open at once; the next ones are closed as they come. */
  maxConnections: number;
  /** Counts the connections refused at the cap. */
  refused: Counter<string>;
}

/**
 * Cuts off clients that hold a connection without sending: Fastify turns Node's request timeout off
 * (a large upload must never be cut), and nothing else ends a request whose body stalls, so each one
 * kept a socket and a file descriptor for ever (4,000 of them took auth to 4,039 open files).
 *
 * The socket's inactivity timer (Node's `server.setTimeout`) measures what the issue asks for: time
 * in which the client sent nothing. A socket that goes quiet is then:
 * - waiting for its headers or its body, or idle between requests: answered `408` (RFC 9110 §15.5.9,
 *   with `Connection: close`) and closed;
 * - waiting for our answer (a handler still working): left alone, it is not the client's silence;
 * - in the middle of an answer the client does not read: closed.
 * An upload that keeps sending resets the timer with every chunk, so it is never cut, however long.
 */
export function guardAgainstSlowClients(server: Server, limits: SlowClientLimits): void {
  const current = new WeakMap<Socket, { req: IncomingMessage; res: ServerResponse }>();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    current.set(req.socket, { req, res });
    // Forgotten once both sides are done: an answer given before the body arrived (a 403 at the door)
    // still leaves the connection waiting for the rest of that body.
    const done = () => {
      if (req.complete && res.writableFinished && current.get(req.socket)?.res === res) current.delete(req.socket);
    };
    res.once('finish', done);
    req.once('end', done);
  });
  server.maxConnections = limits.maxConnections;
  server.on('drop', () => limits.refused.inc());
  // A handler may wait on something slow (a reply going to the exchange) while the client is silent: the
  // request timeout of Node stays off, and headers get the same idle allowance as bodies.
  server.requestTimeout = 0;
  server.headersTimeout = limits.idleTimeoutMs;
  // After an answer Node waits keepAliveTimeout (Fastify: 72 s) for the next request, or for the rest of
  // a body answered early: that wait is the client's silence too. (Behind a load balancer whose idle
  // timeout is longer, raise HTTP_IDLE_TIMEOUT above it, as for any keep-alive server.)
  server.keepAliveTimeout = limits.idleTimeoutMs;
  server.setTimeout(limits.idleTimeoutMs, (socket: Socket) => {
    const inFlight = current.get(socket);
    // Our handler is still working on a request it has whole: not the client's silence.
    if (inFlight?.req.complete && !inFlight.res.headersSent) return;
    if (!inFlight?.res.headersSent) {
      const body = JSON.stringify(
        errorObject(
          408,
          `Nothing was received for ${Math.round(limits.idleTimeoutMs / 1000)} s; the connection is closed`,
        ),
      );
      socket.end(
        'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: application/json; ' +
          `charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      // A client that does not read even this goes with its socket.
      setTimeout(() => socket.destroy(), 1000).unref();
      return;
    }
    socket.destroy();
  });
}
