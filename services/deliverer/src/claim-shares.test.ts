import { ClaimShares, OVER_SHARE_MAX_DELAY_MS, OVER_SHARE_MIN_DELAY_MS } from './claim-shares';

const item = (destinationId: string, tenantId = 'ten_a', maxConcurrency = 1000) => ({ d: { destinationId, tenantId }, settings: { maxConcurrency } });
const many = (n: number, destinationId: string, tenantId?: string) => Array.from({ length: n }, () => item(destinationId, tenantId));

test('a destination past its share keeps claims only while the budget keeps a share and a chunk free beside them; the rest is over, due again one instant per destination', () => {
  const s = new ClaimShares({ maxClaimed: 1024, maxInFlight: 256, shares: { destination: 0.25, tenant: 1 }, chunk: 100 });
  expect(s.destinationCap).toBe(256);
  expect(s.chunkMax).toBe(768);
  // Alone, A is not held to its share: it keeps claims up to 1024 − 256 − 100 = 668 in all.
  const first = s.take(many(300, 'dst_a'), 1_000);
  expect(first.kept).toHaveLength(300);
  const { kept, over } = s.take(many(400, 'dst_a'), 1_000);
  expect(kept).toHaveLength(368);
  expect(over).toHaveLength(32);
  expect(new Set(over.map((o) => o.dueAt))).toEqual(new Set([1_000 + OVER_SHARE_MIN_DELAY_MS]));
  // Another destination, within its own share, is kept whatever A holds.
  expect(s.take(many(10, 'dst_b'), 1_000).kept).toHaveLength(10);
  // A released some, but the total is still past the borrowing line: A past its share gets none.
  for (const k of kept.slice(0, 6)) s.release(k);
  expect(s.take(many(10, 'dst_a'), 1_000).kept).toHaveLength(0);
  expect(s.heldBy('dst_a')).toBe(662);
  // Under its share again, it keeps.
  for (const k of [...first.kept, ...kept.slice(6)]) s.release(k);
  expect(s.heldBy('dst_a')).toBe(0);
  expect(s.take(many(5, 'dst_a'), 1_000).kept).toHaveLength(5);
});

test('a slow destination’s surplus is due again when its claimed backlog is likely half sent, within bounds', () => {
  const s = new ClaimShares({ maxClaimed: 1024, maxInFlight: 256, shares: { destination: 0.25, tenant: 1 }, chunk: 100 });
  s.take(many(668, 'dst_a'), 0);
  // 8 s per request: 668 claimed at 64 in flight is 11 rounds, 88 s; half of it, capped.
  s.observe('dst_a', 8_000);
  expect(s.take(many(1, 'dst_a'), 0).over[0]!.dueAt).toBe(OVER_SHARE_MAX_DELAY_MS);
  // 50 ms per request: 11 rounds × 50 / 2, below the minimum.
  const fast = new ClaimShares({ maxClaimed: 1024, maxInFlight: 256, shares: { destination: 0.25, tenant: 1 }, chunk: 100 });
  fast.take(many(668, 'dst_f'), 0);
  fast.observe('dst_f', 50);
  expect(fast.take(many(1, 'dst_f'), 0).over[0]!.dueAt).toBe(OVER_SHARE_MIN_DELAY_MS);
  // 400 ms per request: 11 × 400 / 2 = 2.2 s.
  const mid = new ClaimShares({ maxClaimed: 1024, maxInFlight: 256, shares: { destination: 0.25, tenant: 1 }, chunk: 100 });
  mid.take(many(668, 'dst_m'), 0);
  mid.observe('dst_m', 400);
  expect(mid.take(many(1, 'dst_m'), 0).over[0]!.dueAt).toBe(2_200);
});

test("a tenant's destinations together keep at most the tenant's share (never less than one destination's)", () => {
  const s = new ClaimShares({ maxClaimed: 1000, maxInFlight: 256, shares: { destination: 0.25, tenant: 0.4 } });
  expect(s.tenantCap).toBe(400);
  expect(s.take(many(250, 'd1'), 0).kept).toHaveLength(250);
  expect(s.take(many(250, 'd2'), 0).kept).toHaveLength(150);
  expect(s.take(many(5, 'd3', 'ten_b'), 0).kept).toHaveLength(5);
  const low = new ClaimShares({ maxClaimed: 1000, maxInFlight: 256, shares: { destination: 0.25, tenant: 0.1 } });
  expect(low.tenantCap).toBe(250);
});

test('a small budget: shares never below 4, and a share that is the whole budget leaves chunks whole', () => {
  const small = new ClaimShares({ maxClaimed: 3, maxInFlight: 256, shares: { destination: 0.25, tenant: 1 } });
  expect(small.destinationCap).toBe(3);
  expect(small.chunkMax).toBe(3);
  const twenty = new ClaimShares({ maxClaimed: 20, maxInFlight: 16, shares: { destination: 0.25, tenant: 1 } });
  expect(twenty.destinationCap).toBe(5);
  expect(twenty.chunkMax).toBe(15);
  const none = new ClaimShares({ maxClaimed: 1024, maxInFlight: 256, shares: { destination: 1, tenant: 1 } });
  expect(none.chunkMax).toBe(1024);
  expect(none.take(many(1024, 'dst_a'), 0).over).toHaveLength(0);
});
