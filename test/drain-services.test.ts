// Graceful drain under load: each service process gets SIGTERM while a steady stream of
// events flows, exits cleanly, is started again, and no acknowledged event is lost.
import { startReceiver, startService, waitFor, type Receiver } from '@hookline/testing';
import { createStack, type Stack } from './support/stack';
import { seedPipeline, startLoad, type SeededPipeline } from './support/seed-pipeline';

jest.setTimeout(180_000);

let stack: Stack;
let rx: Receiver;
let pipe: SeededPipeline;
const slowUntil = { at: 0 };

beforeAll(async () => {
  // Every delivery takes a while, so SIGTERM always finds requests in flight.
  rx = await startReceiver(() => ({ status: 200, delayMs: Date.now() < slowUntil.at ? 3000 : 80 }));
  stack = await createStack('drain', { SHUTDOWN_TIMEOUT_MS: '8000', DELIVERER_CONCURRENCY: '4', LOG_LEVEL: 'info' }, ['ingest', 'router', 'deliverer']);
  pipe = await seedPipeline(stack.db.pool, `${rx.url}/hook`);
});

afterAll(async () => {
  await stack?.close();
  await rx?.close();
});

const hookUrl = (): string => `http://127.0.0.1:${stack.ingestPort}/in/${pipe.ingesterId}`;
const receivedEventIds = (): Set<string> => new Set(rx.requests.map((r) => r.headers['x-hookline-event-id'] as string));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function allDelivered(ids: string[]): Promise<void> {
  await waitFor(() => ids.every((id) => receivedEventIds().has(id)), { what: `all ${ids.length} acknowledged events at the receiver`, timeoutMs: 60_000 });
  await waitFor(async () => {
    const { rows } = await stack.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM events WHERE id = ANY($1::text[]) AND status = 'delivered'`, [ids]);
    return rows[0]!.n === ids.length;
  }, { what: 'every acknowledged event delivered in PostgreSQL', timeoutMs: 30_000 });
}

/** SIGTERM while the load runs; the exit code; then the service again. */
async function restart(name: 'ingest' | 'router' | 'deliverer', env?: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const svc = stack.services[name]!;
  const code = await svc.stop('SIGTERM');
  const output = svc.output();
  if (env) stack.services[name] = await startService(name, { ...stack.env, ...env });
  else await stack.start(name);
  return { code, output };
}

test('SIGTERM to deliverer, router and ingest in turn under load: each exits 0 within its deadline, and every acknowledged event is delivered', async () => {
  const load = startLoad(hookUrl());
  try {
    await waitFor(() => rx.requests.length >= 20, { what: 'a steady stream' });

    const deliverer = await restart('deliverer');
    expect(deliverer.code).toBe(0);
    expect(deliverer.output).not.toContain('drain deadline');
    const afterDeliverer = load.acknowledged.length;
    await waitFor(() => load.acknowledged.length > afterDeliverer + 20, { what: 'events flowing again' });

    const router = await restart('router');
    expect(router.code).toBe(0);
    expect(router.output).toContain('router stopped');
    const afterRouter = load.acknowledged.length;
    await waitFor(() => load.acknowledged.length > afterRouter + 20, { what: 'events flowing again' });

    const ingest = await restart('ingest');
    expect(ingest.code).toBe(0);
    expect(ingest.output).toContain('"message":"stopped"');
    const afterIngest = load.acknowledged.length;
    await waitFor(() => load.acknowledged.length > afterIngest + 20, { what: 'events accepted again' });
  } finally {
    await load.stop();
  }
  expect(load.acknowledged.length).toBeGreaterThan(100);
  await allDelivered(load.acknowledged);
});

test('a deliverer whose requests outlast the drain deadline gives its deliveries back; the next deliverer sends them', async () => {
  const load = startLoad(hookUrl(), 2, 50);
  let drained: { code: number | null; output: string };
  try {
    // Restart with a short deadline, then make every request hang for 3 s.
    await restart('deliverer', { SHUTDOWN_TIMEOUT_MS: '1000' });
    slowUntil.at = Date.now() + 60_000;
    const slowFrom = rx.requests.length;
    await waitFor(() => rx.requests.length >= slowFrom + 3, { what: 'slow requests in flight' });
    slowUntil.at = 0;
    drained = await restart('deliverer');
    await sleep(500);
  } finally {
    await load.stop();
  }
  expect(drained.code).toBe(0);
  const given = drained.output.split('\n').find((l) => l.includes('deliveries in flight given back'));
  expect(given).toBeDefined();
  const ids = JSON.parse(given!)['delivery_ids'] as string[];
  expect(ids.length).toBeGreaterThan(0);
  await allDelivered(load.acknowledged);

  const { rows } = await stack.db.pool.query<{ status: string }>('SELECT status FROM deliveries WHERE id = ANY($1::text[])', [ids]);
  expect(rows.map((r) => r.status)).toEqual(ids.map(() => 'delivered'));
});

test('the same signal again while the deliverer drains exits at once with 1; what it held is recovered and delivered by the next one', async () => {
  const load = startLoad(hookUrl(), 2, 50);
  let code: number | null;
  let output: string;
  try {
    // A long drain deadline: only the second signal can end this drain early. Short claims,
    // so that what the killed process held is recovered within the test.
    await restart('deliverer', { SHUTDOWN_TIMEOUT_MS: '60000', DELIVERY_LEASE_MS: '4000' });
    slowUntil.at = Date.now() + 60_000;
    const slowFrom = rx.requests.length;
    await waitFor(() => rx.requests.length >= slowFrom + 3, { what: 'slow requests in flight' });
    const svc = stack.services.deliverer!;
    svc.child.kill('SIGTERM');
    await waitFor(() => svc.output().includes('"message":"shutting down"'), { what: 'the deliverer to start draining' });
    code = await svc.stop('SIGTERM');
    output = svc.output();
    slowUntil.at = 0;
    await stack.start('deliverer');
    await sleep(500);
  } finally {
    slowUntil.at = 0;
    await load.stop();
  }
  expect(code).toBe(1);
  expect(output).toContain('second signal while draining; exiting now');
  await allDelivered(load.acknowledged);
});
