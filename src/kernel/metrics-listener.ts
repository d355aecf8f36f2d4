import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { listenError } from './listen-error.ts';

/**
 * The process's metrics listener (METRICS_PORT on METRICS_HOST, loopback by default): GET /metrics answers
 * the metrics of every service of the process, and nothing else is served there. Kept off the service
 * ports because those are the ones a reverse proxy or a published container port exposes
 * (docs/decisions.md#metrics-on-their-own-listener).
 */
export interface MetricsListener {
  url: string;
  close(): Promise<void>;
}

export async function startMetricsListener(options: {
  host: string;
  port: number;
  registries: readonly Registry[];
}): Promise<MetricsListener> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Only GET /metrics is here\n');
      return;
    }
    metricsText(options.registries).then(
      (text) => {
        response.writeHead(200, { 'content-type': options.registries[0]?.contentType ?? 'text/plain' });
        response.end(request.method === 'HEAD' ? undefined : text);
      },
      (error: unknown) => {
        response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
        response.end(`metrics could not be collected: ${error instanceof Error ? error.message : String(error)}\n`);
      },
    );
  });
  // A scrape is one short request: a client that keeps a connection open idle holds nothing of value.
  server.keepAliveTimeout = 5_000;
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((error: unknown) => {
    throw listenError(error, {
      portVariable: 'METRICS_PORT',
      port: options.port,
      host: options.host,
      hostVariable: 'METRICS_HOST',
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * The registries' metrics as one exposition: a family two services both have (http_requests_total, the
 * process metrics) is written once, with every service's samples under it (each registry labels its own
 * with `service`), since Prometheus refuses a second TYPE line for one name.
 */
export async function metricsText(registries: readonly Registry[]): Promise<string> {
  const families = new Map<string, { head: string[]; samples: string[] }>();
  for (const registry of registries) {
    let current: { head: string[]; samples: string[] } | undefined;
    for (const line of (await registry.metrics()).split('\n')) {
      const head = /^# (HELP|TYPE) (\S+)/.exec(line);
      if (head) {
        current = families.get(head[2]!) ?? { head: [], samples: [] };
        families.set(head[2]!, current);
        if (!current.head.some((seen) => seen.startsWith(`# ${head[1]} `))) current.head.push(line);
      } else if (line.trim() !== '' && current) {
        current.samples.push(line);
      }
    }
  }
  return `${[...families.values()].map((family) => [...family.head, ...family.samples].join('\n')).join('\n\n')}\n`;
}
