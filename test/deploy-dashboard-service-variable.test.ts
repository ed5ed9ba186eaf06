// The Grafana dashboard's `$service` variable (deploy/grafana/hookline-dashboard.json) must
// offer every service: panels filter `service=~"$service"` (PostgreSQL and Redis errors
// among them, which all four services emit), so a service missing from the variable's
// values is reachable only through "All". The variable's label_values() query is evaluated
// here against what each service's registry exposes right after it starts (metrics made
// as main.ts makes them, before any traffic or error).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createLogger } from '@hookline/logger';
import { createObservability, type ServiceName } from '@hookline/observability';
import { REPO_ROOT } from '../deploy/checks/kustomize-lite';

const SERVICES: ServiceName[] = ['api', 'ingest', 'router', 'deliverer'];

interface Variable {
  name?: string;
  query?: string | { query?: string };
  definition?: string;
}

function serviceVariable(): Variable {
  const d = JSON.parse(readFileSync(resolve(REPO_ROOT, 'deploy/grafana/hookline-dashboard.json'), 'utf8')) as { templating?: { list?: Variable[] } };
  const v = d.templating?.list?.find((x) => x.name === 'service');
  if (!v) throw new Error('the dashboard has no `service` variable');
  return v;
}

/** `label_values(metric{a="x", b=~"y|z"}, label)`, with its matchers. */
function parseLabelValues(q: string): { metric: string; matchers: { name: string; op: string; value: string }[]; label: string } {
  const m = /^\s*label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{([^}]*)\})?\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$/.exec(q);
  if (!m) throw new Error(`not a label_values(metric{…}, label) query: ${q}`);
  const matchers = [...(m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"/g)].map((x) => ({ name: x[1]!, op: x[2]!, value: x[3]!.replace(/\\(.)/g, '$1') }));
  return { metric: m[1]!, matchers, label: m[3]! };
}

function matches(labels: Record<string, string | number>, matchers: { name: string; op: string; value: string }[]): boolean {
  return matchers.every(({ name, op, value }) => {
    const v = String(labels[name] ?? '');
    if (op === '=') return v === value;
    if (op === '!=') return v !== value;
    const re = new RegExp(`^(?:${value})$`);
    return op === '=~' ? re.test(v) : !re.test(v);
  });
}

/** What label_values() answers over the series of every service's registry. */
async function labelValues(q: string): Promise<string[]> {
  const { metric, matchers, label } = parseLabelValues(q);
  const logger = createLogger('test', 'error');
  logger.silent = true;
  const values = new Set<string>();
  for (const service of SERVICES) {
    const { metrics, tracer } = createObservability(service, { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_TRACES_SAMPLE_RATIO: 1 }, logger);
    // The exposition's series, each with the registry's default labels (service).
    for (const m of await metrics.registry.getMetricsAsJSON()) {
      for (const v of m.values) {
        const name = (v as { metricName?: string }).metricName ?? m.name;
        if (name !== metric) continue;
        const labels = { ...v.labels, service } as Record<string, string | number>;
        if (matches(labels, matchers) && labels[label] !== undefined) values.add(String(labels[label]));
      }
    }
    await tracer.close();
  }
  return [...values].sort();
}

test('the `service` variable offers each of the four services, from a metric every one of them exposes from its start', async () => {
  const v = serviceVariable();
  const query = typeof v.query === 'string' ? v.query : (v.query?.query ?? '');
  expect(v.definition ?? query).toBe(query);
  expect(await labelValues(query)).toEqual([...SERVICES].sort());
});

test('the evaluator reads matchers and the label (so a wrong query fails the test above)', async () => {
  expect(parseLabelValues('label_values(x_total{a="b", c=~"d|e"}, service)')).toEqual({
    metric: 'x_total',
    matchers: [
      { name: 'a', op: '=', value: 'b' },
      { name: 'c', op: '=~', value: 'd|e' },
    ],
    label: 'service',
  });
  // The query the dashboard used to have: only the HTTP services register it.
  expect(await labelValues('label_values(hookline_http_requests_total, service)')).toEqual([]);
  // Registered by all four, but a counter has no series before its first error.
  expect(await labelValues('label_values(hookline_db_errors_total, service)')).toEqual([]);
  expect(await labelValues('label_values(process_start_time_seconds{service=~"api|router"}, service)')).toEqual(['api', 'router']);
});
