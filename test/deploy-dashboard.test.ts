// The Grafana dashboard (deploy/grafana) and the metric names in docs/deployment.md are one
// contract with the services' /metrics: checked against each other and against the code.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { dashboardProblems, documentedMetrics, metricNamesInCode, metricUses, type Dashboard } from '../deploy/checks/dashboard-checks';
import { REPO_ROOT } from '../deploy/checks/kustomize-lite';
import { createMetrics } from '@hookline/observability';

const dashboard = (): Dashboard => JSON.parse(readFileSync(resolve(REPO_ROOT, 'deploy/grafana/hookline-dashboard.json'), 'utf8')) as Dashboard;
const metrics = documentedMetrics(readFileSync(resolve(REPO_ROOT, 'docs/deployment.md'), 'utf8'));

test('docs/deployment.md lists the metrics issue 9 asks for', () => {
  expect(Object.fromEntries(metrics)).toEqual({
    hookline_http_requests_total: 'counter',
    hookline_http_request_duration_seconds: 'histogram',
    hookline_events_ingested_total: 'counter',
    hookline_queue_depth: 'gauge',
    hookline_queue_oldest_waiting_age_seconds: 'gauge',
    hookline_delivery_attempts_total: 'counter',
    hookline_ingest_to_delivered_seconds: 'histogram',
    hookline_breaker_state: 'gauge',
    hookline_db_errors_total: 'counter',
    hookline_redis_errors_total: 'counter',
  });
});

test('the dashboard is well formed and queries every documented metric, each as its type allows', () => {
  expect(dashboardProblems(dashboard(), metrics)).toEqual([]);
});

test('every hookline_* metric named in the services and packages is documented', () => {
  const roots = ['services', 'packages'].flatMap((top) =>
    readdirSync(resolve(REPO_ROOT, top), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => join(REPO_ROOT, top, d.name, 'src'))
      .filter((src) => existsSync(src)),
  );
  expect(roots.length).toBeGreaterThanOrEqual(8);
  const undocumented = [...metricNamesInCode(roots)].filter(([name]) => !metrics.has(name));
  expect(undocumented).toEqual([]);
});

test('each documented metric has the type and labels the code registers', async () => {
  const docs = readFileSync(resolve(REPO_ROOT, 'docs/deployment.md'), 'utf8');
  // | `name` | type | `a`, `b` (or –) | emitted by | meaning |
  const documented = [...docs.matchAll(/^\| `(hookline_[a-z0-9_]+)` \| (\w+) \| ([^|]*) \|/gm)].map((m) => ({
    name: m[1]!,
    type: m[2]!,
    labels: [...m[3]!.matchAll(/`([a-z_]+)`/g)].map((l) => l[1]!).sort(),
  }));
  const registered = new Map<string, { name: string; type: string; labels: string[] }>();
  for (const service of ['api', 'ingest', 'router', 'deliverer'] as const) {
    const { registry } = createMetrics(service, { defaultMetrics: false });
    for (const m of await registry.getMetricsAsJSON()) {
      const labelNames = (registry.getSingleMetric(m.name) as unknown as { labelNames?: string[] }).labelNames ?? [];
      registered.set(m.name, { name: m.name, type: String(m.type), labels: [...labelNames].sort() });
    }
  }
  expect(documented.length).toBe(metrics.size);
  expect(documented).toEqual(documented.map((d) => registered.get(d.name) ?? { ...d, type: '(not registered by any service)' }));
});

test('metric names are found in code (so an undocumented one fails the test above)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookline-metrics-'));
  try {
    writeFileSync(join(dir, 'metrics.ts'), "new Counter({ name: 'hookline_surprise_total', help: 'x' });\n");
    writeFileSync(join(dir, 'metrics.test.ts'), "'hookline_only_in_a_test'\n");
    expect([...metricNamesInCode([dir]).keys()]).toEqual(['hookline_surprise_total']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('PromQL uses are read with their enclosing functions', () => {
  expect(metricUses('histogram_quantile(0.9, sum by (le) (rate(hookline_x_bucket[5m]))) / hookline_y')).toEqual([
    // `sum by (le) (…)`: the aggregation's body is the unnamed group.
    { token: 'hookline_x_bucket', inside: ['histogram_quantile', '', 'rate'] },
    { token: 'hookline_y', inside: [] },
  ]);
});

test('the checks find a broken dashboard', () => {
  const d = dashboard();
  const panels = d.panels!;
  const target = panels.find((p) => p.type !== 'row')!;
  target.targets = [{ refId: 'A', expr: 'sum(rate(hookline_queue_depth[5m])) + hookline_delivery_attempts_total + sum(hookline_unknown_total' }];
  panels[2]!.gridPos = { ...panels[1]!.gridPos!, w: 30 };
  panels[3]!.id = panels[4]!.id;
  const problems = dashboardProblems(d, metrics).join('\n');
  expect(problems).toMatch(/hookline_queue_depth is a gauge, rate\(\) of it means nothing/);
  expect(problems).toMatch(/hookline_delivery_attempts_total is a counter; use rate\(\)\/increase\(\)/);
  expect(problems).toMatch(/hookline_unknown_total is not a documented metric/);
  expect(problems).toMatch(/unbalanced brackets/);
  expect(problems).toMatch(/gridPos must lie within 24 columns/);
  expect(problems).toMatch(/panel ids must be unique numbers/);
  const without = new Map(metrics);
  without.delete('hookline_breaker_state');
  expect(dashboardProblems(dashboard(), without).join('\n')).toMatch(/hookline_breaker_state is not a documented metric/);
});
