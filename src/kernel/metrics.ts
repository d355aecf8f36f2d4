import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * How often the event loop's delay is sampled for `nodejs_eventloop_lag_*` (prom-client's default is every
 * 10 ms). Each sample is a timer that wakes an idle process: at 10 ms that was 100 wake-ups a second, and
 * 3.4–4.6 ms of CPU a second for an idle exchange here against 0.7–1.4 at 100 ms (bench/RESULTS.md, "The
 * event loop's delay sampled every 100 ms"). A stall still shows in full at 100 ms, and a 15 s scrape
 * interval still gets 150 samples for its percentiles.
 */
const EVENT_LOOP_SAMPLE_MS = 100;

/**
 * One Prometheus registry per service, so that the three services running in one process
 * (`sealpost start all`) keep their metrics apart under their own `service` label; the process's
 * metrics listener (metrics-listener.ts) serves them all.
 */
export function createRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  return registry;
}

export interface HttpMetrics {
  requests: Counter<'operation' | 'code'>;
  refusedConnections: Counter<string>;
  duration: Histogram<'operation' | 'code'>;
}

/**
 * The fixed HTTP metrics (docs/specification.md#metrics). `operation` is the route's name
 * (`POST /v1/config`), never the raw URL, so ids in paths cannot explode the label set.
 */
export function createHttpMetrics(registry: Registry): HttpMetrics {
  return {
    requests: new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by route and status code',
      labelNames: ['operation', 'code'] as const,
      registers: [registry],
    }),
    refusedConnections: new Counter({
      name: 'http_connections_refused_total',
      help: 'HTTP connections closed at once because HTTP_MAX_CONNECTIONS were open',
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by route and status code',
      labelNames: ['operation', 'code'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
  };
}

/** The operation label of a request: method and route pattern, or `unmatched` for 404s. */
export function operationName(method: string, routePattern: string | undefined): string {
  return routePattern ? `${method} ${routePattern}` : 'unmatched';
}

/**
 * A value computed at scrape time at most every `ms` (default 5 s), shared by the gauges that read it:
 * frequent scrapes, or several Prometheus servers, then cost one query per period.
 */
export function cachedFor<T>(compute: () => Promise<T>, ms = 5_000): () => Promise<T> {
  let cached: { at: number; value: Promise<T> } | undefined;
  return () => {
    if (!cached || Date.now() - cached.at > ms) cached = { at: Date.now(), value: compute() };
    return cached.value;
  };
}
