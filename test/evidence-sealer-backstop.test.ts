// An attempt's id is minted on the deliverer's clock, and the sealer's passes scan attempt ids
// from a cut-off on the api's clock (the previous pass − 5 s; a sweep: the previous sweep −
// 10 min). An attempt whose id is older than that cut-off when it commits (a deliverer clock
// more than 10 minutes behind, or a commit delayed that long) still gets its receipt: a
// backstop walks every attempt id, a bounded step at a time, and issues what is missing,
// while a regular pass still reads only its own range.
import { idTime, newId, type Pool } from '@hookline/db';
import { createLogger } from '@hookline/logger';
import { evidenceFor, evidenceKey, startEvidenceSealer, SWEEP_EVERY_MS } from '@hookline/evidence';
import { createTestDatabase, type TestDatabase } from '@hookline/testing';
import { MISSING_SQL } from '../packages/evidence/src/issue-receipts';
import { attemptMaker, type AttemptMaker } from './evidence-attempts';
import { explainAnalyze, planReads } from './support/plan-reads';

const key = evidenceKey('test-secrets-key-0123456789abcdef');
const logger = createLogger('evidence-test', 'error');
// Windows so long that nothing these tests issue is ever due.
const NEVER_DUE = { windowMs: 10 * 365 * 86_400_000, graceMs: 100 };
const MINUTE = 60_000;

let db: TestDatabase;
let maker: AttemptMaker;

beforeAll(async () => {
  db = await createTestDatabase('evbackstop');
  maker = await attemptMaker(db.pool);
});

afterAll(async () => {
  await db.drop();
});

/** An attempt committed now whose id was minted `agoMs` before `atMs` (on a clock that far behind). */
async function lateAttempt(atMs: number, agoMs: number): Promise<string> {
  const id = await maker.attempt();
  const old = newId('att', atMs - agoMs);
  await db.pool.query('UPDATE delivery_attempts SET id = $2 WHERE id = $1', [id, old]);
  return old;
}

const hasReceipt = async (attemptId: string): Promise<boolean> => (await evidenceFor(db.pool, maker.tenantId, attemptId)) !== null;

/** The pool, recording each statement's text and parameters. */
function recording(pool: Pool): { pool: Pool; take: () => Array<{ sql: string; params: unknown[] }> } {
  let seen: Array<{ sql: string; params: unknown[] }> = [];
  const recorded = new Proxy(pool, {
    get(target, prop) {
      if (prop === 'query') {
        return (sql: unknown, params?: unknown[]) => {
          seen.push({ sql: typeof sql === 'string' ? sql : String((sql as { text?: string }).text), params: params ?? [] });
          return (target.query as (...a: unknown[]) => unknown)(sql, params);
        };
      }
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return {
    pool: recorded,
    take: () => {
      const out = seen;
      seen = [];
      return out;
    },
  };
}

test('an attempt whose id was minted 11 minutes before it committed gets its receipt within a sweep interval; regular passes still read only their own range', async () => {
  const rec = recording(db.pool);
  const warned = createLogger('evidence-test', 'warn');
  const logged: Record<string, unknown>[] = [];
  warned.on('data', (info: Record<string, unknown>) => logged.push(info));
  for (const t of warned.transports) t.silent = true;
  let at = Date.now();
  const start = at;
  const sealer = startEvidenceSealer({ pool: rec.pool, logger: warned, key, ...NEVER_DUE, now: () => new Date(at) }, 3_600_000);
  try {
    await maker.attempt();
    expect(await sealer.tick()).toEqual({ issued: 1, sealed: 0 }); // the first pass: a full scan
    const late = await lateAttempt(at, 11 * MINUTE);
    const fresh = await maker.attempt();
    rec.take();

    // A regular pass: the fresh attempt only, and no attempt id read below its cut-off.
    at += 2_000;
    expect(await sealer.tick()).toEqual({ issued: 1, sealed: 0 });
    expect(await hasReceipt(fresh)).toBe(true);
    expect(await hasReceipt(late)).toBe(false);
    const floor = `att_${idTime(start - 5_000)}`;
    const cursors = rec.take().filter((q) => /\bdelivery_attempts\b/.test(q.sql) && typeof q.params[0] === 'string').map((q) => q.params[0] as string);
    expect(cursors.length).toBeGreaterThan(0);
    for (const c of cursors) expect({ cursor: c, inRange: c >= floor }).toEqual({ cursor: c, inRange: true });

    // Passes every minute (the pinned clock): by one sweep interval after the full scan, it has its receipt.
    let issued = 0;
    while (at < start + SWEEP_EVERY_MS) {
      at = Math.min(at + MINUTE, start + SWEEP_EVERY_MS);
      issued += (await sealer.tick())!.issued;
    }
    expect({ late, receipt: await hasReceipt(late) }).toEqual({ late, receipt: true });
    expect(issued).toBe(1);
    const [bundle] = (await evidenceFor(db.pool, maker.tenantId, late))!;
    expect(bundle!.receipt).toMatchObject({ attempt_id: late, tenant_id: maker.tenantId });
    // Said once, with how far behind its id was.
    const said = logged.filter((l) => l['level'] === 'warn');
    expect(said).toEqual([expect.objectContaining({ issued: 1, missing: 1, oldest_attempt_id: late })]);
    expect(said[0]!['oldest_minted_ms_ago']).toBeGreaterThanOrEqual(11 * MINUTE);
    expect(String(said[0]!['message'])).toMatch(/backstop/);
  } finally {
    await sealer.stop();
  }
});

test('the backstop reads a bounded number of attempt ids per step and goes round the whole table, so every late attempt gets its receipt', async () => {
  let at = Date.now();
  const start = at;
  const perStep = 3;
  const sealer = startEvidenceSealer({ pool: db.pool, logger, key, ...NEVER_DUE, now: () => new Date(at), backstopIds: perStep }, 3_600_000);
  try {
    await sealer.tick();
    // Late by 11 minutes to a day, so they sit among the older ids of the table.
    const late: string[] = [];
    for (const ago of [11, 15, 30, 60, 120, 600, 1440]) late.push(await lateAttempt(at, ago * MINUTE));
    const { rows } = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM delivery_attempts');
    const steps = Math.ceil(rows[0]!.n / perStep) + 1;
    const issuedPerPass: number[] = [];
    while (at < start + SWEEP_EVERY_MS + steps * MINUTE) {
      at += MINUTE;
      issuedPerPass.push((await sealer.tick())!.issued);
    }
    for (const id of late) expect({ id, receipt: await hasReceipt(id) }).toEqual({ id, receipt: true });
    expect(issuedPerPass.reduce((a, b) => a + b, 0)).toBe(late.length);
    // One step reads at most `perStep` ids, so it issues at most that many.
    expect(Math.max(...issuedPerPass)).toBeLessThanOrEqual(perStep);
    expect(issuedPerPass.filter((n) => n > 0).length).toBeGreaterThan(1);
  } finally {
    await sealer.stop();
  }
});

test("a backstop step reads its range of attempt ids and the same range of receipts by index, not the tables", async () => {
  // 60,000 more attempts of one delivery (ids att_00…, before every minted one), all but one in 100 with a receipt.
  const one = await maker.attempt();
  const { rows: d } = await db.pool.query<{ delivery_id: string }>('SELECT delivery_id FROM delivery_attempts WHERE id = $1', [one]);
  await db.pool.query(
    `INSERT INTO delivery_attempts (id, tenant_id, delivery_id, number, status_code, started_at, duration_ms)
     SELECT 'att_00' || lpad(i::text, 8, '0'), $1, $2, 1, 200, now(), 1 FROM generate_series(1, 60000) i`,
    [maker.tenantId, d[0]!.delivery_id],
  );
  await db.pool.query(
    `INSERT INTO evidence_receipts (id, tenant_id, attempt_id, delivery_id, event_id, destination_id, attempt_number, outcome, status_code, started_at, completed_at, duration_ms, key_id, signature, leaf_hash, issued_at)
     SELECT 'rcp_' || substr(a.id, 5), a.tenant_id, a.id, a.delivery_id, 'evt_x', 'dst_x', 1, 'succeeded', 200, now(), now(), 1, 'k', 's', 'h', now()
       FROM delivery_attempts a WHERE a.id LIKE 'att_00%' AND right(a.id, 2) <> '00'`,
  );
  await db.pool.query('ANALYZE delivery_attempts');
  await db.pool.query('ANALYZE evidence_receipts');
  const { seqScans, reads } = planReads(await explainAnalyze(db.pool, MISSING_SQL, ['att_0000020000', 2_000]));
  expect({ seqScans, attempts: reads['delivery_attempts']! <= 2_000, receipts: reads['evidence_receipts']! <= 2_000, reads }).toEqual({ seqScans: [], attempts: true, receipts: true, reads });
  const { rows: answer } = await db.pool.query<{ last: string; n: number; missing: string[] }>(MISSING_SQL, ['att_0000020000', 2_000]);
  expect(answer[0]).toEqual({ last: 'att_0000022000', n: 2_000, missing: Array.from({ length: 20 }, (_, i) => `att_000002${(100 + 100 * i).toString().padStart(4, '0')}`) });
});
