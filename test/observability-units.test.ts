// Pure parts of @hookline/observability and of the pool / cluster configuration.
import { readFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { ConfigError, loadConfig } from '@hookline/config';
import { createLogger } from '@hookline/logger';
import {
  childContext,
  createMetrics,
  createOtlpExporter,
  createTracer,
  MAX_ROUTE_LABELS,
  observeHttp,
  formatTraceparent,
  isTraceId,
  otlpBody,
  parseTraceparent,
  sampledByRatio,
  type FinishedSpan,
  type SpanExporter,
} from '@hookline/observability';
import { deliverQueueName, parseClusterNodes, parseDedicatedPools, parseDeliverQueues } from '@hookline/queues';
import { delivererEnv } from '../services/deliverer/src/config';
import { routerEnv } from '../services/router/src/config';

const logger = createLogger('test', 'error');

describe('W3C traceparent', () => {
  test('parses a valid header and formats it back', () => {
    const v = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    expect(parseTraceparent(v)).toEqual({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', sampled: true });
    expect(formatTraceparent(parseTraceparent(v)!)).toBe(v);
    expect(parseTraceparent([' 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00 '])).toEqual({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', sampled: false });
  });

  test.each([
    ['missing', undefined],
    ['short', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7'],
    ['all-zero trace id', '00-00000000000000000000000000000000-00f067aa0ba902b7-01'],
    ['all-zero span id', '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01'],
    ['version ff', 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'],
    ['version 00 with trailing data', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra'],
    ['not hex', '00-4bf92f3577b34da6a3ce929d0e0e47zz-00f067aa0ba902b7-01'],
    // W3C: the fields are lower-case hex; a traceparent with other characters MUST be ignored.
    ['upper-case trace id', '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01'],
    ['upper-case span id', '00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01'],
    ['upper-case flags', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A'],
  ])('refuses %s', (_, v) => {
    expect(parseTraceparent(v)).toBeNull();
  });

  test('a later version is read by its version-00 prefix', () => {
    expect(parseTraceparent('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future')?.traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
  });

  test('a child keeps the trace and gets a new span id; without a parent a new trace starts', () => {
    const parent = parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')!;
    const child = childContext(parent);
    expect(child.traceId).toBe(parent.traceId);
    expect(child.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(child.spanId).not.toBe(parent.spanId);
    const root = childContext(null);
    expect(isTraceId(root.traceId)).toBe(true);
    expect(root.traceId).not.toBe(childContext(null).traceId);
  });

  test('sampling by ratio is decided by the trace id alone', () => {
    const ids = Array.from({ length: 2000 }, () => childContext(null).traceId);
    const kept = ids.filter((id) => sampledByRatio(id, 0.25)).length;
    expect(kept).toBeGreaterThan(350);
    expect(kept).toBeLessThan(650);
    for (const id of ids.slice(0, 50)) expect(sampledByRatio(id, 0.25)).toBe(sampledByRatio(id, 0.25));
    expect(ids.every((id) => sampledByRatio(id, 1))).toBe(true);
    expect(ids.some((id) => sampledByRatio(id, 0))).toBe(false);
  });
});

describe('tracer', () => {
  const recording = (): SpanExporter & { spans: FinishedSpan[] } => {
    const spans: FinishedSpan[] = [];
    return { spans, export: (s) => spans.push(s), flush: async () => undefined, close: async () => undefined };
  };

  test('spans are children of the given traceparent and exported once, with their parent span id', () => {
    const exporter = recording();
    const tracer = createTracer({ service: 'router', logger, endpoint: '', exporter });
    const span = tracer.start('route', 'consumer', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', { a: 1 });
    expect(span.traceparent).toMatch(/^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01$/);
    span.end({ b: 'x' });
    span.end();
    expect(exporter.spans).toHaveLength(1);
    expect(exporter.spans[0]).toMatchObject({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', parentSpanId: '00f067aa0ba902b7', spanId: span.context.spanId, name: 'route', kind: 'consumer', attributes: { a: 1, b: 'x' } });
  });

  test('without an endpoint nothing is exported but contexts still propagate', () => {
    const tracer = createTracer({ service: 'ingest', logger, endpoint: '' });
    expect(tracer.exporting).toBe(false);
    const span = tracer.start('x', 'server', undefined);
    expect(parseTraceparent(span.traceparent)).toEqual(span.context);
  });

  test('the OTLP/JSON body names the service and keeps hex ids, nanosecond times and error status', () => {
    const body = otlpBody('deliverer', [{ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), name: 'POST destination', kind: 'client', startMs: 1700000000000.5, endMs: 1700000000010, attributes: { n: 2, f: 0.5, ok: true, s: 'v', none: undefined }, error: 'timeout' }]) as {
      resourceSpans: { resource: { attributes: unknown[] }; scopeSpans: { spans: Record<string, unknown>[] }[] }[];
    };
    expect(body.resourceSpans[0]!.resource.attributes).toContainEqual({ key: 'service.name', value: { stringValue: 'hookline-deliverer' } });
    const span = body.resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
    expect(span).toMatchObject({ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), kind: 3, startTimeUnixNano: '1700000000000500000', endTimeUnixNano: '1700000000010000000', status: { code: 2, message: 'timeout' } });
    expect(span['parentSpanId']).toBeUndefined();
    expect(span['attributes']).toEqual([
      { key: 'n', value: { intValue: '2' } },
      { key: 'f', value: { doubleValue: 0.5 } },
      { key: 'ok', value: { boolValue: true } },
      { key: 's', value: { stringValue: 'v' } },
    ]);
  });
});

describe('OTLP exporter', () => {
  test('close gives up on a collector that never answers: a draining service is not held 10 s per batch past its deadline', async () => {
    const held: ServerResponse[] = [];
    const collector = createServer((_req, res) => void held.push(res));
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
    const exporter = createOtlpExporter({ endpoint: `http://127.0.0.1:${(collector.address() as AddressInfo).port}`, service: 'deliverer', logger, intervalMs: 60_000, maxBatch: 10, closeTimeoutMs: 200 });
    try {
      // Five batches: without a bound, close would wait for five 10-second timeouts.
      for (let i = 0; i < 50; i++) exporter.export({ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), name: 'x', kind: 'internal', startMs: 0, endMs: 1, attributes: {} });
      await exporter.close();
      // One post was out when close gave up; the rest were dropped, not sent.
      expect(held).toHaveLength(1);
    } finally {
      collector.closeAllConnections();
      await new Promise((r) => collector.close(r));
    }
  }, 15_000);
});

describe('metrics registry', () => {
  // The "emitted by" column of the metrics table in docs/deployment.md.
  const documented = new Map(
    [...readFileSync(resolve(__dirname, '../docs/deployment.md'), 'utf8').matchAll(/^\| `(hookline_[a-z0-9_]+)` \| \w+ \| [^|]* \| ([^|]+) \|/gm)].map((m) => [m[1]!, m[2]!.trim()]),
  );

  test.each(['api', 'ingest', 'router', 'deliverer'] as const)('%s exposes exactly the metrics the docs say it emits, labelled with its name', async (service) => {
    const metrics = createMetrics(service, { defaultMetrics: false });
    const exposed = metrics.registry.getMetricsAsArray().map((m) => m.name).sort();
    const want = [...documented].filter(([, by]) => by === 'all' || by.split(',').map((s) => s.trim()).includes(service)).map(([name]) => name).sort();
    expect(want.length).toBeGreaterThan(1);
    expect(exposed).toEqual(want);
    metrics.dbErrors.inc({ operation: 'query' });
    expect(await metrics.registry.metrics()).toContain(`hookline_db_errors_total{operation="query",service="${service}"} 1`);
  });

  test('route labels are bounded: past MAX_ROUTE_LABELS distinct values, new ones count as "other"', async () => {
    const metrics = createMetrics('ingest', { defaultMetrics: false });
    const tracer = createTracer({ service: 'ingest', logger, endpoint: '' });
    // A caller that (wrongly) labels by raw path: one series per id, were it not bounded.
    const server = createServer((req, res) => {
      observeHttp({ metrics, logger, tracer }, req, res).route = req.url ?? '';
      res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      for (let i = 0; i < MAX_ROUTE_LABELS + 50; i++) await (await fetch(`${base}/in/ing_${i}`)).text();
      const values = (await metrics.httpRequests.get()).values;
      expect(new Set(values.map((v) => v.labels['route'])).size).toBe(MAX_ROUTE_LABELS + 1);
      expect(values.find((v) => v.labels['route'] === 'other')?.value).toBe(50);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  test('default process metrics are included unless turned off', async () => {
    expect(await createMetrics('router').registry.metrics()).toMatch(/process_cpu_user_seconds_total\{service="router"\}/);
    expect(await createMetrics('router', { defaultMetrics: false }).registry.metrics()).not.toMatch(/process_cpu/);
  });
});

describe('worker pools and Redis Cluster configuration', () => {
  test('DEDICATED_POOLS maps tenants to pools, DELIVER_QUEUES names the queues consumed', () => {
    expect([...parseDedicatedPools(' ten_a=acme, ten_b=acme,ten_c=big-2 ')]).toEqual([['ten_a', 'acme'], ['ten_b', 'acme'], ['ten_c', 'big-2']]);
    expect(parseDedicatedPools('').size).toBe(0);
    expect(() => parseDedicatedPools('ten_a')).toThrow(/tenant_id=pool/);
    expect(() => parseDedicatedPools('ten_a=Acme')).toThrow(/tenant_id=pool/);
    expect(() => parseDedicatedPools('ten_a=x,ten_a=y')).toThrow(/twice/);
    expect(parseDeliverQueues('deliver,deliver.acme,deliver')).toEqual([{ queue: 'deliver', pool: null }, { queue: 'deliver.acme', pool: 'acme' }]);
    expect(() => parseDeliverQueues('route')).toThrow(/DELIVER_QUEUES/);
    expect(() => parseDeliverQueues('deliver.')).toThrow(/DELIVER_QUEUES/);
    expect(deliverQueueName(null)).toBe('deliver');
    expect(deliverQueueName('acme')).toBe('deliver.acme');
  });

  test('a bad pool variable stops the boot, naming it', () => {
    expect(loadConfig(routerEnv, { DEDICATED_POOLS: 'ten_a=acme' }).DEDICATED_POOLS).toBe('ten_a=acme');
    expect(() => loadConfig(routerEnv, { DEDICATED_POOLS: 'ten_a=acme;ten_b' })).toThrow(ConfigError);
    expect(loadConfig(delivererEnv, {}).DELIVER_QUEUES).toBe('deliver');
    expect(() => loadConfig(delivererEnv, { DELIVER_QUEUES: 'deliver,deliver:acme' })).toThrow(/DELIVER_QUEUES/);
  });

  test('REDIS_CLUSTER_NODES lists seed nodes; empty means a single Redis', () => {
    expect(parseClusterNodes('')).toEqual([]);
    expect(parseClusterNodes('10.0.0.1:7000, redis-1.redis:6379,[::1]:7001')).toEqual([
      { host: '10.0.0.1', port: 7000 },
      { host: 'redis-1.redis', port: 6379 },
      { host: '::1', port: 7001 },
    ]);
    expect(() => parseClusterNodes('redis-1')).toThrow(/host:port/);
    expect(() => loadConfig(routerEnv, { REDIS_CLUSTER_NODES: 'redis-1' })).toThrow(/REDIS_CLUSTER_NODES/);
    expect(loadConfig(routerEnv, { REDIS_CLUSTER_NODES: 'a:1,[::1]:2' }).REDIS_CLUSTER_NODES).toBe('a:1,[::1]:2');
  });
});
