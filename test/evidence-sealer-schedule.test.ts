// The sealer reads its clock inside each pass, and never queues more than one pass behind a slow one.
import { Client } from 'pg';
import { parseDatabaseUrl, type Pool } from '@hookline/db';
import { createLogger } from '@hookline/logger';
import { evidenceFor, evidenceKey, startEvidenceSealer } from '@hookline/evidence';
import { createTestDatabase, waitFor, type TestDatabase } from '@hookline/testing';
import { attemptMaker, type AttemptMaker } from './evidence-attempts';

const key = evidenceKey('test-secrets-key-0123456789abcdef');
const logger = createLogger('evidence-test', 'error');
// Windows so long that nothing these tests issue is ever due: a pass takes one connection (its lock).
const NEVER_DUE = { windowMs: 10 * 365 * 86_400_000, graceMs: 100 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let db: TestDatabase;
let maker: AttemptMaker;

beforeAll(async () => {
  db = await createTestDatabase('evsched');
  maker = await attemptMaker(db.pool);
});

afterAll(async () => {
  await db.drop();
});

/** The pool, counting the connections taken for a transaction: one per sealer pass here. */
function counting(pool: Pool): { pool: Pool; passes: () => number } {
  let n = 0;
  const counted = new Proxy(pool, {
    get(target, prop) {
      if (prop === 'connect') {
        return () => {
          n += 1;
          return target.connect();
        };
      }
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { pool: counted, passes: () => n };
}

/** Holds evidence_receipts locked (a pass stops at its first read of it) until `release`. */
async function blockReceipts(): Promise<{ blocked: () => Promise<boolean>; release: () => Promise<void> }> {
  const c = new Client({ connectionString: parseDatabaseUrl(db.url).connectionString });
  await c.connect();
  await c.query('BEGIN');
  await c.query(`LOCK TABLE "${db.schema}".evidence_receipts IN ACCESS EXCLUSIVE MODE`);
  return {
    blocked: async () =>
      (await db.pool.query(`SELECT 1 FROM pg_locks WHERE relation = $1::regclass AND NOT granted`, [`"${db.schema}".evidence_receipts`])).rows.length > 0,
    release: async () => {
      await c.query('COMMIT');
      await c.end();
    },
  };
}

test('a pass asked for during a slow pass stamps its receipts no earlier than the attempts it covers', async () => {
  await maker.attempt();
  const sealer = startEvidenceSealer({ pool: db.pool, logger, key, ...NEVER_DUE }, 3_600_000);
  const lock = await blockReceipts();
  try {
    const first = sealer.tick();
    await waitFor(lock.blocked, { what: 'the first pass waiting on the receipts table' });
    const second = sealer.tick(); // runs once the first is done
    const askedAt = Date.now();
    await sleep(250);
    const late = await maker.attempt(); // started 250 ms after the second pass was asked for
    await lock.release();
    await first;
    expect(await second).toEqual({ issued: 1, sealed: 0 });
    const [bundle] = (await evidenceFor(db.pool, maker.tenantId, late))!;
    const issued = new Date(bundle!.receipt.issued_at).getTime();
    expect(issued).toBeGreaterThanOrEqual(new Date(bundle!.receipt.started_at).getTime());
    expect(issued).toBeGreaterThanOrEqual(askedAt + 250);
  } finally {
    await sealer.stop();
  }
});

test('ticks asked for during a slow pass run one more pass, not one each', async () => {
  const c = counting(db.pool);
  const sealer = startEvidenceSealer({ pool: c.pool, logger, key, ...NEVER_DUE }, 3_600_000);
  const lock = await blockReceipts();
  try {
    const first = sealer.tick();
    await waitFor(lock.blocked, { what: 'the first pass waiting on the receipts table' });
    const more = [sealer.tick(), sealer.tick(), sealer.tick(), sealer.tick(), sealer.tick()];
    await lock.release();
    await first;
    const answers = await Promise.all(more);
    expect(c.passes()).toBe(2);
    for (const a of answers) expect(a).toEqual(answers[0]);
  } finally {
    await sealer.stop();
  }
});

test('timer ticks during a slow pass are skipped, not queued behind it', async () => {
  const c = counting(db.pool);
  const lock = await blockReceipts();
  const sealer = startEvidenceSealer({ pool: c.pool, logger, key, ...NEVER_DUE }, 20);
  try {
    await waitFor(lock.blocked, { what: 'a timer pass waiting on the receipts table' });
    await sleep(400); // some 20 ticks of the timer
  } finally {
    const stopped = sealer.stop(); // waits for the passes already asked for
    await lock.release();
    await stopped;
  }
  expect(c.passes()).toBeLessThanOrEqual(2);
});
