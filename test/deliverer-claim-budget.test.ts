// DELIVERER_MAX_CLAIMED: a deliver job naming more deliveries than the budget is claimed in
// chunks, so the process never holds more claimed (status delivering, leased, body in
// memory) than the budget; every delivery still goes out.
import { startReceiver, type Receiver } from '@hookline/testing';
import { createHarness, type Harness } from './deliverer-fixtures';

jest.setTimeout(60_000);

let h: Harness;
let rx: Receiver;

beforeAll(async () => {
  h = await createHarness('dlvbudget');
  rx = await startReceiver(() => ({ status: 200, body: 'ok', delayMs: 150 }));
});

afterAll(async () => {
  await rx?.close();
  await h?.close();
});

/** Runs one job of `n` deliveries with `env`, sampling how many are claimed at once. */
async function peakClaimed(n: number, env: Record<string, string>): Promise<{ peak: number; delivered: number }> {
  const dst = await h.destination(`${rx.url}/budget`, { config: { max_concurrency: 20 } });
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await h.delivery(dst.id)).deliveryId);
  const { deps } = h.replica(env);
  let peak = 0;
  let running = true;
  const sampler = (async () => {
    while (running) {
      const { rows } = await h.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE id = ANY($1) AND lease_until > now() AND status = 'pending'`, [ids]);
      peak = Math.max(peak, rows[0]!.n);
      await new Promise((r) => setTimeout(r, 15));
    }
  })();
  const summary = await h.run(ids, deps);
  running = false;
  await sampler;
  const { rows } = await h.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE id = ANY($1) AND status = 'delivered'`, [ids]);
  expect(summary).toMatchObject({ claimed: n, delivered: n });
  return { peak, delivered: rows[0]!.n };
}

test('a job larger than the budget is claimed in chunks: never more than the budget claimed at once, all delivered', async () => {
  const bounded = await peakClaimed(7, { DELIVERER_MAX_CLAIMED: '3' });
  expect(bounded.delivered).toBe(7);
  expect(bounded.peak).toBeGreaterThan(0);
  expect(bounded.peak).toBeLessThanOrEqual(3);
  // Control: with the default budget the same job is claimed whole.
  const whole = await peakClaimed(7, {});
  expect(whole.delivered).toBe(7);
  expect(whole.peak).toBe(7);
});

test('a budget below 1 is refused at startup', () => {
  expect(() => h.replica({ DELIVERER_MAX_CLAIMED: '0' })).toThrow(/DELIVERER_MAX_CLAIMED/);
});
