// METRICS_TOKEN: with it set, /metrics of every service (the api's and ingest's public
// listeners, the router's and deliverer's health servers) answers only a scrape that
// carries it; the running processes, over loopback.
import { createStack, type Stack } from './support/stack';

jest.setTimeout(120_000);

const TOKEN = 'metrics-token-0123456789';
type Name = 'api' | 'ingest' | 'router' | 'deliverer';
const NAMES: Name[] = ['api', 'ingest', 'router', 'deliverer'];

let stack: Stack;

beforeAll(async () => {
  stack = await createStack('metricstoken', { METRICS_TOKEN: TOKEN }, NAMES);
});

afterAll(async () => {
  await stack?.close();
});

const scrape = (name: Name, authorization?: string): Promise<Response> =>
  fetch(`${stack.services[name]!.url}/metrics`, { headers: authorization === undefined ? {} : { authorization } });

test.each(NAMES)('%s: /metrics without the token is 401 and shows no metric', async (name) => {
  for (const auth of [undefined, 'Bearer wrong', `Bearer ${TOKEN}x`, TOKEN, `Basic ${TOKEN}`]) {
    const res = await scrape(name, auth);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
    expect(await res.text()).not.toContain('hookline_');
  }
});

test.each(NAMES)('%s: /metrics with the token answers the Prometheus text', async (name) => {
  const res = await scrape(name, `Bearer ${TOKEN}`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/plain');
  expect(await res.text()).toMatch(/^# HELP hookline_/m);
});

test('health probes stay open: /healthz needs no token', async () => {
  for (const name of NAMES) expect((await fetch(`${stack.services[name]!.url}/healthz`)).status).toBe(200);
});
