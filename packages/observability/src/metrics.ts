import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type Metric } from 'prom-client';

export type ServiceName = 'api' | 'ingest' | 'router' | 'deliverer';

const HTTP = ['method', 'route', 'status'] as const;

/**
 * The metric contract of docs/deployment.md ("Metrics"): names, types and labels. Labels
 * never carry tenant ids, event ids or URLs; `destination_id` on the breaker gauge is
 * bounded because only destinations whose circuit is not closed have a series.
 */
function define() {
  const httpDuration = new Histogram({
    name: 'hookline_http_request_duration_seconds',
    help: 'HTTP request to response time',
    labelNames: HTTP,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [],
  });
  return {
    // Copied from the histogram's counts at scrape time: one observation per request, not two.
    httpRequests: new Counter({
      name: 'hookline_http_requests_total',
      help: 'HTTP requests answered; route is the route pattern',
      labelNames: HTTP,
      registers: [],
      async collect() {
        this.reset();
        for (const v of (await httpDuration.get()).values) if (v.metricName?.endsWith('_count')) this.inc(v.labels as Record<(typeof HTTP)[number], string>, v.value);
      },
    }),
    httpDuration,
    eventsIngested: new Counter({ name: 'hookline_events_ingested_total', help: 'Events received, by provider and outcome', labelNames: ['provider', 'outcome'] as const, registers: [] }),
    queueDepth: new Gauge({ name: 'hookline_queue_depth', help: 'Jobs per queue and state', labelNames: ['queue', 'state'] as const, registers: [] }),
    queueOldestAge: new Gauge({ name: 'hookline_queue_oldest_waiting_age_seconds', help: 'Age of the oldest waiting job (0 when none)', labelNames: ['queue'] as const, registers: [] }),
    deliveryAttempts: new Counter({ name: 'hookline_delivery_attempts_total', help: 'Delivery attempts by outcome (delivered, failed, exhausted)', labelNames: ['outcome'] as const, registers: [] }),
    ingestToDelivered: new Histogram({
      name: 'hookline_ingest_to_delivered_seconds',
      help: "From the event's receipt by ingest to its successful delivery, retries included",
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400],
      registers: [],
    }),
    breakerState: new Gauge({ name: 'hookline_breaker_state', help: 'Circuit per destination: 0 closed, 1 half-open, 2 open (closed ones have no series)', labelNames: ['destination_id'] as const, registers: [] }),
    dbErrors: new Counter({ name: 'hookline_db_errors_total', help: 'PostgreSQL errors (failed queries, connection errors)', labelNames: ['operation'] as const, registers: [] }),
    redisErrors: new Counter({ name: 'hookline_redis_errors_total', help: 'Redis errors (failed commands, connection errors)', labelNames: ['operation'] as const, registers: [] }),
  };
}

type Definitions = ReturnType<typeof define>;

/** Which process exposes which metric (the "emitted by" column of docs/deployment.md). */
const EMITTED_BY: Record<keyof Definitions, readonly ServiceName[]> = {
  httpRequests: ['api', 'ingest'],
  httpDuration: ['api', 'ingest'],
  eventsIngested: ['ingest'],
  queueDepth: ['router', 'deliverer'],
  queueOldestAge: ['router', 'deliverer'],
  deliveryAttempts: ['deliverer'],
  ingestToDelivered: ['deliverer'],
  breakerState: ['deliverer'],
  dbErrors: ['api', 'ingest', 'router', 'deliverer'],
  redisErrors: ['api', 'ingest', 'router', 'deliverer'],
};

export type Metrics = Definitions & { registry: Registry; service: ServiceName };

/**
 * One registry per process, every series labelled with `service`. Metrics another service
 * emits exist (so shared code may touch them) but are not exposed here. Node's default
 * process metrics are included unless `defaultMetrics` is false (tests).
 */
export function createMetrics(service: ServiceName, opts: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  const defs = define();
  for (const key of Object.keys(defs) as (keyof Definitions)[]) {
    if (EMITTED_BY[key].includes(service)) registry.registerMetric(defs[key] as Metric);
  }
  return { ...defs, registry, service };
}
