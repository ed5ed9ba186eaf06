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
  rx = await startReceiver();
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
  // The receiver holds each answer until a sample taken after its request arrived has been
  // counted: every delivery being sent is then still claimed when the sampler looks, however
  // slow the machine (no time window for the sampler to land in). Deliveries are claimed
  // before they are sent, so such a sample sees at least the whole claimed chunk.
  let started = 0;
  const held: Array<{ after: number; release: () => void }> = [];
  rx.setBehaviour(() => {
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    held.push({ after: started, release });
    return { status: 200, body: 'ok', hold };
  });
  const sampler = (async () => {
    while (running) {
      const sample = ++started;
      const { rows } = await h.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE id = ANY($1) AND lease_until > now() AND status = 'pending'`, [ids]);
      peak = Math.max(peak, rows[0]!.n);
      for (let i = held.length - 1; i >= 0; i--) {
        if (held[i]!.after < sample) held.splice(i, 1)[0]!.release();
      }
      await new Promise((r) => setTimeout(r, 15));
    }
  })();
  const summary = await h.run(ids, deps).finally(() => {
    running = false;
  });
  await sampler;
  for (const x of held.splice(0)) x.release();
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
