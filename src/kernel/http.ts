import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, {
  LogController,
  type ConnectionError,
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type RawReplyDefaultExpression,
  type RawRequestDefaultExpression,
  type RawServerDefault,
} from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { Gauge, type Registry } from 'prom-client';
import { AppError, badRequest, errorObject, newErrorId } from './errors.ts';
import type { Logger } from './logger.ts';
import { cachedFor, createHttpMetrics, operationName } from './metrics.ts';
import { closeQuietConnectionsOnStop } from './quiet-connections.ts';
import { guardAgainstSlowClients } from './slow-clients.ts';
import { formatValidationError, nulCharacterField } from './validation.ts';

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export interface HttpServerOptions {
  service: string;
  title: string;
  description: string;
  logger: Logger;
  registry: Registry;
  /** Named checks run by GET /readyz (e.g. db, objects); each throws when its dependency is down. */
  readiness: Record<string, () => Promise<unknown>>;
  /** Largest JSON body accepted, in bytes. */
  bodyLimit?: number;
  /**
   * A whole HTML page for a refusal that a browser opened as a page (unknown path, a path part too long),
   * or undefined to answer with the error object; the auth service's reader link uses it.
   */
  browserPage?: BrowserPage;
  /** Headers every answer carries, refusals and pages included (the auth service's HSTS). */
  headers?: Readonly<Record<string, string>>;
  /** HTTP_IDLE_TIMEOUT and HTTP_MAX_CONNECTIONS (slow-clients.ts); Node's defaults when absent. */
  limits?: { idleTimeoutMs: number; maxConnections: number };
}

export type BrowserPage = (request: FastifyRequest, status: number, errorId: string) => string | undefined;

/** Throws on bytes that are not UTF-8 rather than replacing them. */
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Headers of a page from BrowserPage: nothing runs, nothing loads but our icon, nothing frames it. */
export const BROWSER_PAGE_CSP =
  "default-src 'none'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * Sends a whole server-made page with those headers; `csp` for a page that needs one thing more (the sign-out
 * confirmation's form). X-Frame-Options for browsers that predate frame-ancestors.
 */
export function sendBrowserPage(reply: FastifyReply, status: number, html: string, csp = BROWSER_PAGE_CSP) {
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('content-security-policy', csp)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY')
    .send(html);
}

/** The spec's error object as a schema, for OpenAPI responses. */
export const ErrorObjectSchema = Type.Object(
  {
    id: Type.String({ description: 'unique identifier of this occurrence; also in the log line of the request' }),
    kind: Type.Integer({ description: 'the HTTP status code' }),
    errorCode: Type.Optional(Type.String({ description: 'subtype of the error, for choosing a localized message' })),
    message: Type.String({ description: 'human-readable description for logs and debugging' }),
    attemptsLeft: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          'incorrect_code, invalid_code_or_email: wrong tries left before the code is void (code_attempts_exceeded); ' +
          "code_replaced: the newer code's tries left",
      }),
    ),
    limit: Type.Optional(
      Type.Union([Type.Literal('interval'), Type.Literal('hourly')], {
        description:
          'sms_rate_limit: interval, a code went to this destination a moment ago; ' +
          'hourly, a count per hour was reached',
      }),
    ),
    cid: Type.Optional(
      Type.String({ description: 'seal_broken: the IPFS CID of the content that failed verification' }),
    ),
    copies: Type.Optional(
      Type.Array(
        Type.Object({
          cluster: Type.String({ description: '`host:port` of the cluster the copy was read from' }),
          state: Type.Union([Type.Literal('damaged'), Type.Literal('missing'), Type.Literal('unreachable')], {
            description:
              'damaged: read, and fails verification; missing: the IPFS API answered without it; ' +
              'unreachable: the IPFS API did not answer',
          }),
        }),
        { description: 'seal_broken, unavailable (seal service): each copy that could not be served' },
      ),
    ),
    endedAt: Type.Optional(
      Type.String({ format: 'date-time', description: 'message_withdrawn, message_expired: when the message ended' }),
    ),
    contact: Type.Optional(
      Type.String({ description: "message_withdrawn, message_expired: whom to ask about it (the sender's address)" }),
    ),
    refused: Type.Optional(
      Type.Array(
        Type.Object({
          line: Type.Integer({ description: 'the CSV line, or the position in a JSON array from 1' }),
          email: Type.Optional(Type.String()),
          reason: Type.String(),
        }),
        { description: 'a contacts import refused whole (allOrNothing): its bad rows (the first 1,000)' },
      ),
    ),
    refusedCount: Type.Optional(Type.Integer({ minimum: 0, description: 'a contacts import: all its bad rows' })),
    recipients: Type.Optional(
      Type.Array(Type.String(), {
        description: 'mobile_required: the recipients with no mobile number from any source',
      }),
    ),
    sentAt: Type.Optional(
      Type.String({ format: 'date-time', description: 'reply_already_sent: when the reply was sent' }),
    ),
  },
  { $id: 'ErrorObject', title: 'Error object' },
);

const READINESS_TIMEOUT_MS = 3000;

/**
 * Fastify logs two lines per request at info: on a terminal they drowned everything else (929 of 1,188
 * lines of a demo run, the sign-in code among them). They move to debug; a failed request still logs at
 * error, as Fastify does.
 */
class RequestLinesAtDebug extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) {
      super.requestCompleted(error, request, reply);
      return;
    }
    reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}

/**
 * The Fastify factory shared by the three services: TypeBox schemas validate requests and describe
 * the API (OpenAPI 3 at /openapi.json, UI at /swagger/), every error leaves as the spec's error
 * object, and /healthz and /readyz are always there (/metrics is on the metrics listener).
 */
export async function createHttpServer(options: HttpServerOptions): Promise<App> {
  const app = Fastify({
    loggerInstance: options.logger as FastifyBaseLogger,
    bodyLimit: options.bodyLimit ?? 1024 * 1024,
    genReqId: () => randomUUID(),
    // Strict bodies: unknown fields are errors rather than silently dropped, and "1" is not 1.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } },
    return503OnClosing: true,
    // Fastify's default of 100 would refuse (414) a message id of 101 to 128 characters, which ids may have.
    routerOptions: { maxParamLength: 200 },
    logController: new RequestLinesAtDebug(),
    clientErrorHandler: answerClientError,
    frameworkErrors: (error, request, reply) => answerFrameworkError(error, request, reply, options.browserPage),
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.addSchema(ErrorObjectSchema);
  app.setErrorHandler(handleError);
  app.setNotFoundHandler((request, reply) => {
    const body = errorObject(404, `No route ${request.method} ${request.url.split('?')[0]}`, 'not_found');
    request.log.info({ errorId: body.id }, 'route not found');
    const page = options.browserPage?.(request, 404, body.id);
    if (page !== undefined) return void sendBrowserPage(reply, 404, page);
    void reply.code(404).send(body);
  });
  const everyAnswer = Object.entries(options.headers ?? {});
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
    for (const [name, value] of everyAnswer) reply.header(name, value);
  });

  // Fastify decodes a JSON body leniently, turning bytes that are not UTF-8 into U+FFFD (a sender's
  // address among them): RFC 8259 §8.1 JSON is UTF-8, so such a body is refused as it came.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    let text: string;
    try {
      text = STRICT_UTF8.decode(body as Buffer);
    } catch {
      done(badRequest('The request body is not valid UTF-8 (RFC 8259 §8.1)'), undefined);
      return;
    }
    parseJson(request, text, done);
  });

  // Before any route's schema: a NUL in a JSON string would reach PostgreSQL (which refuses it, a 500)
  // or a message header. Found by test/fuzz/json-bodies.
  app.addHook('preValidation', async (request) => {
    const field = nulCharacterField(request.body);
    if (field !== undefined)
      throw badRequest(`${field || 'the request body'} contains a NUL character (\\u0000), which is not allowed`);
  });

  const metrics = createHttpMetrics(options.registry);
  if (options.limits) guardAgainstSlowClients(app.server, { ...options.limits, refused: metrics.refusedConnections });
  closeQuietConnectionsOnStop(app);
  registerReadinessGauge(options.registry, options.readiness, options.logger);
  app.addHook('onResponse', async (request, reply) => {
    const labels = {
      operation: operationName(request.method, request.routeOptions.url),
      code: String(reply.statusCode),
    };
    metrics.requests.inc(labels);
    metrics.duration.observe(labels, reply.elapsedTime / 1000);
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: { title: options.title, description: options.description, version: '1' },
      components: {
        securitySchemes: {
          adminToken: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN' },
          serviceToken: { type: 'http', scheme: 'bearer', description: 'SERVICE_TOKEN' },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  await app.register(swaggerUi, { routePrefix: '/swagger' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  // No /metrics here: the service port is the one a proxy publishes; the process's metrics listener
  // (METRICS_PORT, kernel/metrics-listener.ts) serves them.
  app.get(
    '/healthz',
    {
      schema: {
        tags: ['operations'],
        summary: 'The process is up',
        response: { 200: Type.Object({ status: Type.Literal('ok') }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );
  app.get(
    '/readyz',
    {
      schema: {
        tags: ['operations'],
        summary: 'The dependencies (database, object store, ...) answer',
        response: {
          200: Type.Object({ status: Type.Literal('ready'), checks: Type.Record(Type.String(), Type.Literal('ok')) }),
          503: Type.Ref('ErrorObject'),
        },
      },
    },
    async (request) => {
      const results = await checkReadiness(options.readiness, request.log);
      const failed = results.filter(([, problem]) => problem !== undefined);
      if (failed.length > 0) {
        throw new AppError(
          'unavailable',
          503,
          `Not ready: ${failed.map(([name, problem]) => `${name} ${problem}`).join(', ')}`,
        );
      }
      return { status: 'ready' as const, checks: Object.fromEntries(results.map(([name]) => [name, 'ok' as const])) };
    },
  );
  return app;
}

/** Runs every readiness check (each under a time limit): [name, undefined] when it passed, else the reason to show. */
async function checkReadiness(
  checks: Record<string, () => Promise<unknown>>,
  log: { warn(object: object, message: string): void },
): Promise<Array<readonly [string, string | undefined]>> {
  return Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      try {
        await withTimeout(check(), READINESS_TIMEOUT_MS);
        return [name, undefined] as const;
      } catch (error) {
        log.warn({ check: name, err: error }, 'readiness check failed');
        return [name, error instanceof ReadinessProblem ? error.message : 'unreachable'] as const;
      }
    }),
  );
}

/**
 * `service_ready` (1 or 0), the answer /readyz would give, for alerting on a service that still serves
 * /metrics but cannot work. Checked at scrape time, at most every 5 s (the checks touch the database,
 * the object store and, for seal, the primary cluster).
 */
function registerReadinessGauge(
  registry: Registry,
  checks: Record<string, () => Promise<unknown>>,
  log: { warn(object: object, message: string): void },
): void {
  const ready = cachedFor(() =>
    checkReadiness(checks, log).then((results) => results.every(([, problem]) => problem === undefined)),
  );
  new Gauge({
    name: 'service_ready',
    help:
      'Whether the service is ready (its /readyz answer): ' +
      'database, object store and its own dependencies reachable',
    registers: [registry],
    async collect() {
      this.set((await ready()) ? 1 : 0);
    },
  });
}

/**
 * A readiness failure whose message the public /readyz answer may show (say, "the IPFS daemon behind
 * the primary cluster does not answer"); other failures show as "unreachable" and go to the log only.
 */
export class ReadinessProblem extends Error {}

function handleError(error: FastifyError | AppError | Error, request: FastifyRequest, reply: FastifyReply) {
  const id = newErrorId();
  if (error instanceof AppError) {
    const body = errorObject(error.status, error.message, error.errorCode, id, error.details);
    logErrorLine(request, error.status, id, error);
    void reply.code(error.status).headers(error.headers).send(body);
    return;
  }
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) {
    const message = formatValidationError(fastifyError.validation, fastifyError.validationContext);
    logErrorLine(request, 400, id, error);
    void reply.code(400).send(errorObject(400, message, 'validation_failed', id));
    return;
  }
  const status = fastifyError.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    // Fastify's own client errors (bad JSON, unsupported media type, body too large) carry safe messages.
    const code = status === 413 ? 'payload_too_large' : status === 404 ? 'not_found' : 'validation_failed';
    logErrorLine(request, status, id, error);
    void reply.code(status).send(errorObject(status, fastifyError.message, code, id));
    return;
  }
  // Anything else is our fault: log it whole, answer without stack traces or SQL.
  request.log.error({ err: error, errorId: id }, 'internal error');
  void reply.code(500).send(errorObject(500, `Internal error (reference ${id})`, 'internal', id));
}

/**
 * What Fastify's router refuses before any route runs (a URL whose percent-encoding does not decode, a
 * path parameter over maxParamLength) skips the error handler and, by default, leaves in Fastify's own
 * shape without an id and without a log line. This gives it the spec's error object like the rest.
 */
function answerFrameworkError(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
  browserPage: BrowserPage | undefined,
) {
  const status = error.statusCode ?? 400;
  const message =
    error.code === 'FST_ERR_BAD_URL'
      ? 'The URL is not valid: a percent-encoded part does not decode'
      : error.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? 'A part of the URL path is longer than the server accepts'
        : undefined;
  // No route matched, so the onSend hook that sets it does not run.
  reply.header('x-request-id', request.id);
  if (message === undefined) return handleError(error, request, reply);
  const body = errorObject(status, message, 'validation_failed');
  logErrorLine(request, status, body.id, error);
  const page = browserPage?.(request, status, body.id);
  if (page !== undefined) return void sendBrowserPage(reply, status, page);
  void reply.code(status).send(body);
}

/**
 * What Node's HTTP parser refuses before there is a request (a header block over the size limit, a
 * malformed request, a body cut short, a request too slow to arrive) never reaches handleError: Fastify
 * answers it on the socket itself, by default with a body of its own shape. This answers with the spec's
 * error object like every other refusal (found by test/fuzz/multipart-uploads and test/security).
 */
function answerClientError(this: FastifyInstance, error: ConnectionError, socket: Socket) {
  // A reset connection has nobody left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'The request headers are larger than the server accepts']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'The request did not arrive in time']
        : [400, 'The request is not valid HTTP or ended before its body did'];
  const answer = errorObject(status, message, status === 400 ? 'validation_failed' : undefined);
  const body = JSON.stringify(answer);
  this.log.info({ errorId: answer.id, status, reason: error.code ?? error.message }, 'client error');
  // Like Node's own handler: never write into an answer that has begun on this connection already (a
  // handler may have answered before the rest of its request body broke off).
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

function logErrorLine(request: FastifyRequest, status: number, errorId: string, error: Error) {
  const line = { errorId, status, errorCode: (error as AppError).errorCode, reason: error.message };
  if (status >= 500) request.log.error({ ...line, err: (error as AppError).cause ?? error }, 'request failed');
  else request.log.info(line, 'request refused');
}

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
