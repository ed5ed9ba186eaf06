// An attempt stored with times a receipt cannot state (an edge report with started_at
// 9999-12-31T23:59:59Z and a day's duration, accepted before the api checked report times)
// must not stop receipts and sealing for every tenant: it is skipped and logged.
import { createLogger } from '@hookline/logger';
import { evidenceFor, evidenceKey, issueReceipts, listMerkleRoots, startEvidenceSealer, type SkippedAttempt } from '@hookline/evidence';
import { createTestDatabase, type TestDatabase } from '@hookline/testing';
import { attemptMaker, type AttemptMaker } from './evidence-attempts';

const key = evidenceKey('test-secrets-key-0123456789abcdef');

let db: TestDatabase;
let a: AttemptMaker;
let b: AttemptMaker;

beforeAll(async () => {
  db = await createTestDatabase('evbadtime');
  a = await attemptMaker(db.pool);
  b = await attemptMaker(db.pool);
});

afterAll(async () => {
  await db.drop();
});

/** An attempt of `m`'s tenant whose stored start and duration are set as given (SQL literal for the start). */
async function attemptAt(m: AttemptMaker, startedAt: string, durationMs: number): Promise<string> {
  const id = await m.attempt();
  await db.pool.query('UPDATE delivery_attempts SET started_at = $2::timestamptz, duration_ms = $3 WHERE id = $1', [id, startedAt, durationMs]);
  return id;
}

const receiptOf = async (m: AttemptMaker, attemptId: string) => (await evidenceFor(db.pool, m.tenantId, attemptId))?.[0]?.receipt ?? null;

test('the sealer skips and logs an attempt whose end is past year 9999; every other attempt gets its receipt and every tenant its root', async () => {
  const before = await a.attempt();
  const poisoned = await attemptAt(a, '9999-12-31T23:59:59Z', 86_400_000);
  const others = [await a.attempt(), await b.attempt(), await b.attempt()];

  const logger = createLogger('evidence-test', 'error');
  const logged: Record<string, unknown>[] = [];
  logger.on('data', (info: Record<string, unknown>) => logged.push(info));
  for (const t of logger.transports) t.silent = true;
  let at = Date.now();
  const sealer = startEvidenceSealer({ pool: db.pool, logger, key, windowMs: 1_000, graceMs: 0, now: () => new Date(at) }, 3_600_000);
  try {
    // The first pass scans every attempt: it used to fail on the poisoned one, every time.
    expect(await sealer.tick()).toMatchObject({ issued: 4 });
    at += 2_000;
    const second = await sealer.tick();
    expect(second).not.toBeNull();
  } finally {
    await sealer.stop();
  }

  for (const id of [before, ...others.slice(0, 1)]) expect(await receiptOf(a, id)).toMatchObject({ attempt_id: id });
  for (const id of others.slice(1)) expect(await receiptOf(b, id)).toMatchObject({ attempt_id: id });
  expect(await receiptOf(a, poisoned)).toBeNull();
  // Both tenants' windows are sealed: their receipts carry proofs under a root.
  for (const m of [a, b]) {
    expect((await listMerkleRoots(db.pool, m.tenantId)).merkle_roots.length).toBeGreaterThan(0);
    const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM evidence_receipts WHERE tenant_id = $1 AND merkle_root_id IS NULL', [m.tenantId]);
    expect(rows[0].n).toBe(0);
  }
  const errors = logged.filter((l) => l['level'] === 'error');
  expect(errors).toEqual([expect.objectContaining({ attempt_id: poisoned, tenant_id: a.tenantId, started_at: '9999-12-31T23:59:59.000Z', duration_ms: 86_400_000 })]);
  expect(String(errors[0]!['message'])).toMatch(/no evidence receipt/);
});

test('issueReceipts skips a start outside years 1-9999 or infinite, reports it, and issues the rest of the batch', async () => {
  const bad = [await attemptAt(b, 'infinity', 0), await attemptAt(b, '0001-01-01T00:00:00Z', -1), await attemptAt(b, '10000-06-01T00:00:00Z', 0)];
  const good = await b.attempt();
  // A start of year 9999 with an end in it is stated as stored.
  const late = await attemptAt(b, '9999-12-31T23:59:59Z', 500);
  const skipped: SkippedAttempt[] = [];
  expect(await issueReceipts(db.pool, key, { onSkipped: (s) => skipped.push(s) })).toBe(2);
  // (The first test's attempt of the other tenant is met again too: a full scan.)
  expect(skipped.filter((s) => s.tenant_id === b.tenantId).map((s) => s.attempt_id).sort()).toEqual([...bad].sort());
  expect(skipped.find((s) => s.attempt_id === bad[0])).toMatchObject({ tenant_id: b.tenantId, started_at: null });
  expect(await receiptOf(b, good)).toMatchObject({ attempt_id: good });
  expect(await receiptOf(b, late)).toMatchObject({ started_at: '9999-12-31T23:59:59.000Z', completed_at: '9999-12-31T23:59:59.500Z' });
  // Nothing stays half-done: a second run issues nothing and skips the same ones again.
  expect(await issueReceipts(db.pool, key)).toBe(0);
});
