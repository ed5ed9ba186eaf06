// Metrics, traces and logs of the running services: ingest, router and deliverer as
// separate processes, an OTLP collector and a receiver on loopback.
import { randomBytes } from 'node:crypto';
import { seedTenant, startReceiver, waitFor, type Receiver } from '@hookline/testing';
import { createStack, type Stack } from './support/stack';
import { seedPipeline, type SeededPipeline } from './support/seed-pipeline';

jest.setTimeout(120_000);

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: { stringValue?: string } }[];
}

let stack: Stack;
let collector: Receiver;
let rx: Receiver;
let flaky: Receiver;
let ok: SeededPipeline;
let failing: SeededPipeline;

beforeAll(async () => {
  collector = await startReceiver(() => ({ status: 200, body: '{}' }));
  rx = await startReceiver();
  flaky = await startReceiver(() => ({ status: 500 }));
  stack = await createStack(
    'obspipe',
    {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      LOG_LEVEL: 'debug',
      QUEUE_METRICS_INTERVAL_MS: '200',
      BREAKER_FAILURE_THRESHOLD: '2',
      BREAKER_COOLDOWN_MS: '400',
    },
    ['api', 'ingest', 'router', 'deliverer'],
  );
  ok = await seedPipeline(stack.db.pool, `${rx.url}/hook`);
  failing = await seedPipeline(stack.db.pool, `${flaky.url}/hook`, ok.tenantId);
});

afterAll(async () => {
  await stack?.close();
  await Promise.all([collector, rx, flaky].map((r) => r?.close()));
});

const spans = (): OtlpSpan[] =>
  collector.requests.flatMap((r) => {
    const body = JSON.parse(r.body.toString()) as { resourceSpans: { resource: { attributes: { key: string; value: { stringValue: string } }[] }; scopeSpans: { spans: OtlpSpan[] }[] }[] };
    return body.resourceSpans.flatMap((rs) => {
      const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue;
      return rs.scopeSpans.flatMap((s) => s.spans.map((span) => ({ ...span, service })));
    });
  });

type Name = 'api' | 'ingest' | 'router' | 'deliverer';

const metricsOf = async (name: Name): Promise<string> => (await fetch(`${stack.services[name]!.url}/metrics`)).text();

const logLines = (name: Name): Record<string, unknown>[] =>
  stack.services[name]!
    .output()
    .split('\n')
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });

test('one traceparent runs from the inbound request through both queues to the outbound request, and every hop is exported', async () => {
  const traceId = randomBytes(16).toString('hex');
  const callerSpan = randomBytes(8).toString('hex');
  const res = await fetch(`http://127.0.0.1:${stack.ingestPort}/in/${ok.ingesterId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${callerSpan}-01`, authorization: 'Bearer caller-secret-token-4711', 'x-request-id': 'req-obs-1' },
    body: JSON.stringify({ type: 'order.paid', card: 'body-marker-9321' }),
  });
  expect(res.status).toBe(202);
  const { event_id: eventId } = (await res.json()) as { event_id: string };

  await waitFor(() => rx.requests.length === 1, { what: 'the delivery' });
  const outbound = rx.requests[0]!.headers['traceparent'] as string;
  expect(outbound).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
  const outboundSpan = outbound.split('-')[2]!;
  expect(outboundSpan).not.toBe(callerSpan);
  const { rows } = await stack.db.pool.query('SELECT correlation_id FROM events WHERE id = $1', [eventId]);
  expect(rows[0].correlation_id).toBe(traceId);

  // server (ingest) → consumer (router) → consumer (deliverer) → client (deliverer): one trace, each the parent of the next.
  const chain = await waitFor(() => {
    const mine = spans().filter((s) => s.traceId === traceId);
    const server = mine.find((s) => s.kind === 2);
    const route = mine.find((s) => s.kind === 5 && s.name === 'route');
    const deliver = mine.find((s) => s.kind === 5 && s.name === 'deliver');
    const client = mine.find((s) => s.kind === 3);
    return server && route && deliver && client ? { server, route, deliver, client } : null;
  }, { what: 'the four spans of the trace' });
  expect(chain.server).toMatchObject({ parentSpanId: callerSpan, name: 'POST /in/{ingester_id}', service: 'hookline-ingest' });
  expect(chain.route).toMatchObject({ parentSpanId: chain.server.spanId, service: 'hookline-router' });
  expect(chain.deliver).toMatchObject({ parentSpanId: chain.route.spanId, service: 'hookline-deliverer' });
  expect(chain.client).toMatchObject({ spanId: outboundSpan, service: 'hookline-deliverer' });
  expect(chain.client.attributes).toContainEqual({ key: 'event_id', value: { stringValue: eventId } });

  // One line per request and per job, each with its ids; nothing secret, no body.
  const request = logLines('ingest').find((l) => l['message'] === 'request' && l['event_id'] === eventId);
  expect(request).toMatchObject({ level: 'debug', request_id: 'req-obs-1', trace_id: traceId, ingester_id: ok.ingesterId, tenant_id: ok.tenantId, route: '/in/{ingester_id}', status: 202, method: 'POST' });
  const routed = await waitFor(() => logLines('router').find((l) => l['message'] === 'route job done' && (l['event_ids'] as string[]).includes(eventId)), { what: 'the route job line' });
  expect(routed).toMatchObject({ level: 'info', trace_id: traceId, deliver_queues: ['deliver'] });
  const delivered = await waitFor(() => logLines('deliverer').find((l) => l['message'] === 'deliver job done' && l['trace_id'] === traceId), { what: 'the deliver job line' });
  expect(delivered).toMatchObject({ level: 'info', queue: 'deliver', delivered: 1, delivery_ids: [expect.stringMatching(/^dlv_/)] });
  expect(logLines('deliverer').find((l) => l['message'] === 'delivery attempt' && l['event_id'] === eventId)).toMatchObject({ trace_id: traceId, status_code: 200, delivery_id: (delivered['delivery_ids'] as string[])[0] });
  for (const name of ['api', 'ingest', 'router', 'deliverer'] as const) {
    const out = stack.services[name]!.output();
    expect(out).not.toContain('caller-secret-token-4711');
    expect(out).not.toContain('body-marker-9321');
  }
});

test('/metrics of each service: requests by route pattern, events by provider and outcome, queues, attempts and the ingest→delivered latency', async () => {
  const before = rx.requests.length;
  const res = await fetch(`http://127.0.0.1:${stack.ingestPort}/in/${ok.ingesterId}`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
  expect(res.status).toBe(202);
  expect((await fetch(`http://127.0.0.1:${stack.ingestPort}/in/ing_does_not_exist`, { method: 'POST', body: '{}' })).status).toBe(404);
  await waitFor(() => rx.requests.length === before + 1, { what: 'the second delivery' });

  const ingest = await metricsOf('ingest');
  expect(ingest).toMatch(/hookline_events_ingested_total\{provider="generic",outcome="accepted",service="ingest"\} [2-9]/);
  expect(ingest).toContain('hookline_events_ingested_total{provider="unknown",outcome="rejected_other",service="ingest"} 1');
  expect(ingest).toMatch(/hookline_http_requests_total\{method="POST",route="\/in\/\{ingester_id\}",status="202",service="ingest"\} [2-9]/);
  expect(ingest).toMatch(/hookline_http_request_duration_seconds_count\{[^}]*route="\/in\/\{ingester_id\}",status="404"[^}]*\} 1\n/);
  expect(ingest).not.toContain(ok.ingesterId); // raw paths never become labels
  expect(ingest).toMatch(/^process_cpu_user_seconds_total\{service="ingest"\}/m);

  const router = await waitFor(async () => {
    const text = await metricsOf('router');
    return /hookline_queue_depth\{queue="route",state="waiting",service="router"\} 0/.test(text) ? text : null;
  }, { what: 'router queue metrics' });
  expect(router).toMatch(/hookline_queue_oldest_waiting_age_seconds\{queue="deliver",service="router"\} \d/);

  const deliverer = await waitFor(async () => {
    const text = await metricsOf('deliverer');
    return /hookline_delivery_attempts_total\{outcome="delivered",service="deliverer"\} [2-9]/.test(text) ? text : null;
  }, { what: 'the attempts counter' });
  expect(deliverer).toMatch(/hookline_ingest_to_delivered_seconds_count\{service="deliverer"\} [2-9]/);
  expect(deliverer).toMatch(/hookline_queue_depth\{queue="deliver",state="active",service="deliverer"\} \d/);
  expect(deliverer).not.toMatch(/hookline_events_ingested_total/);
});

test('a failing destination shows its open circuit and failed attempts; the series goes when the circuit closes', async () => {
  for (let i = 0; i < 3; i++) {
    const r = await fetch(`http://127.0.0.1:${stack.ingestPort}/in/${failing.ingesterId}`, { method: 'POST', body: JSON.stringify({ i }), headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(202);
  }
  const series = `hookline_breaker_state{destination_id="${failing.destinationId}",service="deliverer"}`;
  const open = await waitFor(async () => {
    const text = await metricsOf('deliverer');
    return text.includes(`${series} 2`) ? text : null;
  }, { what: 'the open circuit' });
  expect(open).toMatch(/hookline_delivery_attempts_total\{outcome="failed",service="deliverer"\} [1-9]/);
  expect(open).not.toContain(`destination_id="${ok.destinationId}"`);

  flaky.setBehaviour(() => ({ status: 200 }));
  await waitFor(async () => !(await metricsOf('deliverer')).includes(series), { what: 'the series to go once the circuit closed', timeoutMs: 30_000 });
});

test('the api: /metrics with its requests by route pattern, one log line per request, no credentials in it', async () => {
  const tenant = await seedTenant(stack.db.pool);
  const api = stack.services.api!.url;
  const listed = await fetch(`${api}/v1/tenants/${tenant.tenantId}/ingesters`, { headers: { 'x-api-key': tenant.apiKey, 'x-request-id': 'req-api-obs' } });
  expect(listed.status).toBe(200);
  expect((await fetch(`${api}/v1/no/such/path`)).status).toBe(404);
  const text = await metricsOf('api');
  expect(text).toMatch(/hookline_http_requests_total\{method="GET",route="\/v1\/tenants\/:tid\/ingesters",status="200",service="api"\} 1/);
  expect(text).toMatch(/hookline_http_requests_total\{method="GET",route="unmatched",status="404",service="api"\} 1/);
  expect(text).not.toContain(tenant.tenantId);
  expect(text).toMatch(/hookline_db_errors_total/);
  const line = await waitFor(() => logLines('api').find((l) => l['message'] === 'request' && l['request_id'] === 'req-api-obs'), { what: 'the request line' });
  expect(line).toMatchObject({ level: 'info', method: 'GET', route: '/v1/tenants/:tid/ingesters', status: 200, trace_id: expect.stringMatching(/^[0-9a-f]{32}$/) });
  expect(stack.services.api!.output()).not.toContain(tenant.apiKey);
});

test('an error answered by a handler mounted on a path with parameters still labels the route pattern: no tenant id in /metrics', async () => {
  // The MCP key routes' error handler is mounted on /v1/tenants/:tid/mcp-keys; express sets
  // req.baseUrl to that path, with the tenant id in it, while it runs.
  const tenantId = `ten_label${randomBytes(6).toString('hex')}`;
  const api = stack.services.api!.url;
  expect((await fetch(`${api}/v1/tenants/${tenantId}/mcp-keys`)).status).toBe(401);
  const text = await metricsOf('api');
  expect(text).not.toContain(tenantId);
  expect(text).toMatch(/hookline_http_requests_total\{method="GET",route="\/v1\/tenants\/:tid\/mcp-keys",status="401",service="api"\} 1/);
});
