import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { newId, parseDatabaseUrl } from '@hookline/db';
import { createLogger } from '@hookline/logger';
import {
  canonical, evidenceFor, receiptsByDelivery, evidenceKey, inclusionPath, inclusionProof, issueReceipts, leafHash, listMerkleRoots, listReceipts, merkleRoot, nodeHash,
  ConcurrentSealError, SEAL_SELECT_SQL, sealDueWindows, sealWindow, startEvidenceSealer, SWEEP_EVERY_MS, verifyInclusion, verifyReceipt, type EvidenceBundle,
} from '@hookline/evidence';
import { startReceiver, waitFor, type Receiver } from '@hookline/testing';
import { createHarness, type Harness } from './deliverer-fixtures';

const SECRETS_KEY = 'test-secrets-key-0123456789abcdef';
const key = evidenceKey(SECRETS_KEY);
const sha256 = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');
const run = promisify(execFile);

// RFC 6962 §2.1, written recursively and independently of the implementation under test.
function mth(leaves: Buffer[]): Buffer {
  if (leaves.length === 1) return leaves[0]!;
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  return nodeHash(mth(leaves.slice(0, k)), mth(leaves.slice(k)));
}
function path(m: number, leaves: Buffer[]): Buffer[] {
  if (leaves.length === 1) return [];
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  return m < k ? [...path(m, leaves.slice(0, k)), mth(leaves.slice(k))] : [...path(m - k, leaves.slice(k)), mth(leaves.slice(0, k))];
}

let h: Harness;
let rx: Receiver;
const sent: { deliveryId: string; eventId: string }[] = [];

beforeAll(async () => {
  h = await createHarness('evidence');
  // The first request of each delivery fails, so one delivery has two attempts.
  rx = await startReceiver((n) => (n === 1 ? { status: 500, body: 'nope' } : { status: 200, body: `thanks ${n}` }));
  const dst = await h.destination(`${rx.url}/hooks/in?token=secret-in-query`);
  for (const body of ['{"order":1}', '{"order":2}', '{"order":3}']) sent.push(await h.delivery(dst.id, { body }));
  await h.run(sent.map((s) => s.deliveryId));
  await waitFor(async () => {
    await h.run([sent[0]!.deliveryId]);
    return (await h.attempts(sent[0]!.deliveryId)).length === 2;
  }, { what: 'the retry of the first delivery' });
});

afterAll(async () => {
  await rx.close();
  await h.close();
});

test('issues one signed receipt per attempt and seals them into a root whose proofs verify', async () => {
  const pool = h.db.pool;
  // The payload of the third event is gone before receipts are issued: its hash is null.
  await pool.query('DELETE FROM event_payloads WHERE event_id = $1', [sent[2]!.eventId]);
  expect(await issueReceipts(pool, key)).toBe(4);
  expect(await issueReceipts(pool, key)).toBe(0);

  const { receipts } = await listReceipts(pool, h.tenantId, { limit: 100 });
  expect(receipts).toHaveLength(4);
  const first = receipts.filter((b) => b.receipt.delivery_id === sent[0]!.deliveryId).sort((a, b) => a.receipt.attempt_number - b.receipt.attempt_number);
  expect(first.map((b) => [b.receipt.outcome, b.receipt.status_code])).toEqual([['failed', 500], ['succeeded', 200]]);
  // The hash of the body is the hash of the bytes the receiver got; the response hash is of the stored text.
  const received = rx.requests.find((r) => r.body.toString() === '{"order":1}')!;
  expect(first[0]!.receipt.request_body_sha256).toBe(sha256(received.body));
  expect(first[0]!.receipt.response_body_sha256).toBe(sha256('nope'));
  expect(first[0]!.receipt.destination_origin).toBe(rx.url);
  expect(receipts.find((b) => b.receipt.delivery_id === sent[2]!.deliveryId)!.receipt.request_body_sha256).toBeNull();
  expect(receipts.every((b) => b.proof === null && b.root === null)).toBe(true);

  const root = await sealWindow(pool, key, h.tenantId, { start: new Date(0), end: new Date(Date.now() + 60_000) });
  expect(root).not.toBeNull();
  expect(root!.leaf_count).toBe(4);
  expect(await sealWindow(pool, key, h.tenantId, { start: new Date(0), end: new Date(Date.now() + 60_000) })).toBeNull();

  const sealed = (await listReceipts(pool, h.tenantId, { limit: 100 })).receipts;
  const leaves = [...sealed].sort((a, b) => a.proof!.leaf_index - b.proof!.leaf_index).map((b) => Buffer.from(b.proof!.leaf_hash, 'hex'));
  expect(root!.root_hash).toBe(mth(leaves).toString('hex'));
  for (const b of sealed) {
    expect(b.root).toEqual(root);
    expect(verifyReceipt(b.receipt, b.proof!, b.root!, { key: key.key })).toEqual({ valid: true, checks: expect.any(Object) });
  }
  const one = await inclusionProof(pool, sealed[0]!.receipt.id, h.tenantId);
  expect(one).toEqual(sealed[0]);
  expect((await listMerkleRoots(pool, h.tenantId)).merkle_roots).toEqual([root]);
  expect(await evidenceFor(pool, h.tenantId, sent[0]!.deliveryId)).toHaveLength(2);
  expect(await evidenceFor(pool, h.tenantId, root!.id)).toHaveLength(4);
  const byDelivery = await receiptsByDelivery(pool, h.tenantId, sent.map((s) => s.deliveryId));
  expect(sent.map((s) => byDelivery.get(s.deliveryId)!.map((b) => b.receipt.attempt_number))).toEqual([[1, 2], [1], [1]]);
  // Another tenant sees nothing of it.
  expect(await inclusionProof(pool, sealed[0]!.receipt.id, 'ten_other')).toBeNull();
  expect(await evidenceFor(pool, 'ten_other', sent[0]!.deliveryId)).toBeNull();
});

test('a tampered receipt, proof or root fails verification', async () => {
  const { receipts } = await listReceipts(h.db.pool, h.tenantId, { limit: 100 });
  const b = receipts.find((x) => x.receipt.status_code === 500)!;
  const check = (x: EvidenceBundle, k = key.key) => verifyReceipt(x.receipt, x.proof!, x.root!, { key: k });
  expect(check(b).valid).toBe(true);

  const edited = check({ ...b, receipt: { ...b.receipt, status_code: 200, outcome: 'succeeded' } });
  expect(edited).toMatchObject({ valid: false, reason: 'leaf_hash_matches_receipt failed' });
  // Recomputing the leaf hash in the proof does not help: the path no longer leads to the root.
  const forged = { ...b.receipt, status_code: 200 };
  const relabelled = check({ ...b, receipt: forged, proof: { ...b.proof!, leaf_hash: leafHash(canonical(forged)).toString('hex') } });
  expect(relabelled.valid).toBe(false);
  expect(relabelled.checks['inclusion']).toBe(false);

  const badPath = check({ ...b, proof: { ...b.proof!, audit_path: b.proof!.audit_path.map((p, i) => (i === 0 ? sha256(p) : p)) } });
  expect(badPath).toMatchObject({ valid: false, reason: 'inclusion failed' });
  const badIndex = check({ ...b, proof: { ...b.proof!, leaf_index: (b.proof!.leaf_index + 1) % b.proof!.tree_size } });
  expect(badIndex.valid).toBe(false);
  const badRoot = check({ ...b, root: { ...b.root!, root_hash: sha256('another tree') } });
  expect(badRoot.valid).toBe(false);
  const resigned = check({ ...b, root: { ...b.root!, leaf_count: 5 } });
  expect(resigned.valid).toBe(false);
  const wrongKey = check(b, evidenceKey('another-secrets-key-0123456789').key);
  expect(wrongKey).toMatchObject({ valid: false, reason: 'receipt_signature failed' });
  expect(wrongKey.checks['inclusion']).toBe(true);
});

test('Merkle trees match the RFC 6962 recursive definition for every size up to 33', () => {
  for (let n = 1; n <= 33; n++) {
    const leaves = Array.from({ length: n }, (_, i) => leafHash(`leaf ${i}`));
    const root = merkleRoot(leaves);
    expect(root.equals(mth(leaves))).toBe(true);
    for (let i = 0; i < n; i++) {
      const p = inclusionPath(leaves, i);
      expect(p.map((x) => x.toString('hex'))).toEqual(path(i, leaves).map((x) => x.toString('hex')));
      expect(verifyInclusion(leaves[i]!, i, n, p, root)).toBe(true);
      if (n > 1) expect(verifyInclusion(leaves[i]!, (i + 1) % n, n, p, root)).toBe(false);
      expect(verifyInclusion(leaves[i]!, i, n, p, merkleRoot([...leaves, leafHash('one more')]))).toBe(false);
    }
  }
  // A leaf can never pose as an interior node (domain separation).
  const two = [leafHash('a'), leafHash('b')];
  expect(leafHash(Buffer.concat(two)).equals(merkleRoot(two))).toBe(false);
});

test('the sealer issues and seals under its lock, once', async () => {
  const pool = h.db.pool;
  const dst = await h.destination(`${rx.url}/later`);
  const more = await h.delivery(dst.id, { body: '{"order":4}' });
  await h.run([more.deliveryId]);
  let now = new Date();
  const sealer = startEvidenceSealer({ pool, logger: createLogger('evidence-test', 'error'), key, windowMs: 1000, graceMs: 100, now: () => now }, 3_600_000);
  const holder = new Client({ connectionString: parseDatabaseUrl(h.db.url).connectionString });
  await holder.connect();
  try {
    await holder.query(`SELECT pg_advisory_lock(hashtext($1 || ':hookline-evidence-sealer'))`, [h.db.schema]);
    expect(await sealer.tick()).toBeNull();
    await holder.query(`SELECT pg_advisory_unlock(hashtext($1 || ':hookline-evidence-sealer'))`, [h.db.schema]);

    const t = new Date();
    // Issued now; its window has not ended yet, so nothing is sealed.
    now = t;
    expect(await sealer.tick()).toEqual({ issued: 1, sealed: 0 });
    now = new Date(t.getTime() + 2_500);
    expect(await sealer.tick()).toEqual({ issued: 0, sealed: 1 });
    now = new Date(t.getTime() + 5_000);
    expect(await sealer.tick()).toEqual({ issued: 0, sealed: 0 });
  } finally {
    await holder.end();
    await sealer.stop();
  }
  const [bundle] = (await evidenceFor(pool, h.tenantId, more.deliveryId))!;
  expect(bundle!.root!.leaf_count).toBe(1);
  expect(new Date(bundle!.root!.window_end).getTime() - new Date(bundle!.root!.window_start).getTime()).toBe(1000);
  expect(verifyReceipt(bundle!.receipt, bundle!.proof!, bundle!.root!, { key: key.key }).valid).toBe(true);
});

test('the sealer holds its lock in an open transaction, as a pooler in transaction mode needs', async () => {
  const pool = h.db.pool;
  const dst = await h.destination(`${rx.url}/pooled`);
  const more = await h.delivery(dst.id, { body: '{"order":5}' });
  await h.run([more.deliveryId]);
  const sealer = startEvidenceSealer({ pool, logger: createLogger('evidence-test', 'error'), key, windowMs: 1000, graceMs: 100 }, 3_600_000);
  const blocker = new Client({ connectionString: parseDatabaseUrl(h.db.url).connectionString });
  await blocker.connect();
  try {
    // Receipts cannot be read or written until the blocker commits: the pass stops midway.
    await blocker.query('BEGIN');
    await blocker.query(`LOCK TABLE "${h.db.schema}".evidence_receipts IN ACCESS EXCLUSIVE MODE`);
    const tick = sealer.tick();
    // A session-level lock would be held by a backend between transactions ("idle"); PgBouncer
    // in transaction mode may then hand that server connection to anyone. Held by an open
    // transaction, the lock stays with the connection that took it. (Read on a connection of
    // its own each time: inside the blocker's transaction pg_stat_activity stays as first read.)
    const holders = async (): Promise<{ state: string; in_xact: boolean }[]> =>
      (
        await pool.query<{ state: string; in_xact: boolean }>(
          `SELECT a.state, a.xact_start IS NOT NULL AS in_xact FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'advisory' AND l.granted AND l.objid::int = hashtext($1 || ':hookline-evidence-sealer')`,
          [h.db.schema],
        )
      ).rows;
    await waitFor(async () => (await holders()).length === 1, { what: 'the sealer holding its lock' });
    expect(await holders()).toEqual([{ state: 'idle in transaction', in_xact: true }]);
    await blocker.query('COMMIT');
    expect(await tick).toEqual({ issued: 1, sealed: 0 });
    expect(await holders()).toEqual([]);
  } finally {
    await blocker.end();
    await sealer.stop();
  }
});

test('passes look back a short while; the periodic sweep finds an attempt that committed long after its id was minted', async () => {
  const pool = h.db.pool;
  const dst = await h.destination(`${rx.url}/late`);
  const late = await h.delivery(dst.id, { body: '{"order":5}' });
  const t = new Date(Date.now() + 1000);
  let now = t;
  const sealer = startEvidenceSealer({ pool, logger: createLogger('evidence-test', 'error'), key, windowMs: 1000, graceMs: 100, now: () => now }, 3_600_000);
  try {
    await sealer.tick(); // the first pass is a sweep over everything
    // An attempt whose id was minted 5 minutes before it committed (a stalled writer).
    const minted = new Date(t.getTime() - 5 * 60_000);
    await pool.query(
      `INSERT INTO delivery_attempts (id, tenant_id, delivery_id, number, status_code, started_at, duration_ms, via)
       VALUES ($1, $2, $3, 1, 200, $4, 5, 'direct')`,
      [newId('att', minted.getTime()), h.tenantId, late.deliveryId, minted],
    );
    now = new Date(t.getTime() + 15_000);
    expect((await sealer.tick())!.issued).toBe(0);
    now = new Date(t.getTime() + SWEEP_EVERY_MS + 1);
    expect((await sealer.tick())!.issued).toBe(1);
  } finally {
    await sealer.stop();
  }
  expect((await receiptsByDelivery(pool, h.tenantId, [late.deliveryId])).get(late.deliveryId)).toHaveLength(1);
});

test('a pass does not look up again the attempts that the previous pass covered', async () => {
  const pool = h.db.pool;
  const dst = await h.destination(`${rx.url}/covered`);
  const one = await h.delivery(dst.id, { body: '{"order":6}' });
  await h.run([one.deliveryId]);
  const { rows: [attempt] } = await pool.query<{ id: string }>('SELECT id FROM delivery_attempts WHERE delivery_id = $1', [one.deliveryId]);
  // issueReceipts: an id in `covered` is skipped; every page is reported once it is covered.
  const pages: string[][] = [];
  expect(await issueReceipts(pool, key, { covered: new Set([attempt!.id]), onCovered: (ids) => pages.push(ids) })).toBe(0);
  expect(pages.flat()).toContain(attempt!.id);
  expect((await receiptsByDelivery(pool, h.tenantId, [one.deliveryId])).get(one.deliveryId) ?? []).toHaveLength(0);

  // The sealer: the first pass issues the receipt and remembers the attempt. Its receipt is
  // then removed behind the sealer's back: the next pass (whose range overlaps) does not
  // look the attempt up again, the next sweep does.
  const t = new Date(Date.now() + 1000);
  let now = t;
  const sealer = startEvidenceSealer({ pool, logger: createLogger('evidence-test', 'error'), key, windowMs: 3_600_000, graceMs: 100, now: () => now }, 3_600_000);
  try {
    expect((await sealer.tick())!.issued).toBe(1);
    await pool.query('DELETE FROM evidence_receipts WHERE attempt_id = $1', [attempt!.id]);
    now = new Date(t.getTime() + 2_000);
    expect((await sealer.tick())!.issued).toBe(0);
    now = new Date(t.getTime() + SWEEP_EVERY_MS + 1);
    expect((await sealer.tick())!.issued).toBe(1);
  } finally {
    await sealer.stop();
  }
  expect((await receiptsByDelivery(pool, h.tenantId, [one.deliveryId])).get(one.deliveryId)).toHaveLength(1);
});

const ROOT = resolve(__dirname, '..');
/** The verify CLI on a file: its exit code and what it printed. */
const cli = (file: string, env: Record<string, string> = {}) =>
  run(join(ROOT, 'node_modules/.bin/tsx'), [join(ROOT, 'packages/evidence/src/verify.cli.ts'), file], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env } }).then(
    (r) => ({ code: 0, out: r.stdout, err: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout, err: e.stderr }),
  );

test('the CLI verifies a bundle file and refuses a tampered one', async () => {
  const bundles = (await listReceipts(h.db.pool, h.tenantId, { limit: 100 })).receipts.filter((b) => b.proof);
  const dir = mkdtempSync(join(tmpdir(), 'evidence-'));
  const good = join(dir, 'good.json');
  const bad = join(dir, 'bad.json');
  writeFileSync(good, JSON.stringify({ receipts: bundles }));
  writeFileSync(bad, JSON.stringify({ ...bundles[0], receipt: { ...bundles[0]!.receipt, duration_ms: 1 } }));
  const ok = await cli(good, { SECRETS_KEY });
  expect(ok.code).toBe(0);
  expect(ok.out.trim().split('\n')).toHaveLength(bundles.length);
  expect(ok.out).toContain('HMACs checked');
  expect(await cli(good, { SECRETS_KEY: 'not-the-key-that-signed-them' })).toMatchObject({ code: 1, out: expect.stringContaining('receipt_signature failed') });
  expect(await cli(bad)).toMatchObject({ code: 1, out: expect.stringContaining('FAIL') });
  expect(await cli('--help')).toMatchObject({ code: 0, out: expect.stringContaining('usage: pnpm evidence:verify <file.json>') });
});

test('the CLI reports a bundle whose shape was tampered with as FAIL, and still checks the others', async () => {
  const [first, second, third] = (await listReceipts(h.db.pool, h.tenantId, { limit: 100 })).receipts.filter((b) => b.proof);
  const file = join(mkdtempSync(join(tmpdir(), 'evidence-')), 'mixed.json');
  const broken = [
    { ...second!, proof: { ...second!.proof!, audit_path: 'deadbeef' } },
    { ...third!, proof: { root_id: third!.proof!.root_id } },
  ];
  writeFileSync(file, JSON.stringify({ receipts: [first, ...broken] }));
  const r = await cli(file, { SECRETS_KEY });
  expect(r.code).toBe(1);
  expect(r.err).toBe('');
  expect(r.out.trim().split('\n')).toEqual([
    expect.stringMatching(new RegExp(`^ok   ${first!.receipt.id}: `)),
    expect.stringMatching(new RegExp(`^FAIL ${second!.receipt.id}: malformed bundle`)),
    expect.stringMatching(new RegExp(`^FAIL ${third!.receipt.id}: malformed bundle`)),
  ]);
});

/** Five deliveries sent to `path` and their receipts issued, unsealed; their ids. */
async function fiveReceipts(path: string): Promise<string[]> {
  const dst = await h.destination(`${rx.url}/${path}`);
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push((await h.delivery(dst.id, { body: `{"${path}":${i}}` })).deliveryId);
  await h.run(ids);
  expect(await issueReceipts(h.db.pool, key)).toBe(5);
  return ids;
}

/** Each delivery's receipt is sealed, with a proof that verifies against its root. */
async function expectProofsVerify(deliveryIds: string[]): Promise<void> {
  for (const id of deliveryIds) {
    const [bundle] = (await evidenceFor(h.db.pool, h.tenantId, id))!;
    expect(verifyReceipt(bundle!.receipt, bundle!.proof!, bundle!.root!, { key: key.key }).valid).toBe(true);
  }
}

const countUnsealed = async (): Promise<number> =>
  (await h.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM evidence_receipts WHERE merkle_root_id IS NULL')).rows[0]!.n;

test('a window with more receipts than a root may hold is sealed into several roots, each receipt in one', async () => {
  const pool = h.db.pool;
  const busy = await fiveReceipts('busy');
  const unsealed = await countUnsealed();
  expect(unsealed).toBeGreaterThanOrEqual(5);
  // One window spanning decades (aligned to multiples of 10^12 ms), roots of at most 2 leaves.
  const roots = await sealDueWindows(pool, key, { windowMs: 1e12, before: new Date(Date.now() + 1e12), maxLeaves: 2, budgetMs: 60_000 });
  expect(roots.map((r) => r.leaf_count)).toEqual([...Array(Math.floor(unsealed / 2)).fill(2), ...(unsealed % 2 ? [1] : [])]);
  expect(new Set(roots.map((r) => r.window_start)).size).toBe(1);
  expect(await countUnsealed()).toBe(0);
  await expectProofsVerify(busy);
});

test('a sealing pass starts no new root once its budget is spent, and the next pass goes on where it stopped', async () => {
  const pool = h.db.pool;
  const ids = await fiveReceipts('budget');
  expect(await countUnsealed()).toBe(5);
  // The clock reads 0 when the pass starts and 1,000 ms afterwards: past a 100 ms budget after the first root.
  let reads = 0;
  const clock = (): number => (reads++ === 0 ? 0 : 1_000);
  const opts = { windowMs: 1e12, before: new Date(Date.now() + 1e12), maxLeaves: 2, budgetMs: 100 };
  const first = await sealDueWindows(pool, key, { ...opts, clock });
  expect(first.map((r) => r.leaf_count)).toEqual([2]);
  expect(await countUnsealed()).toBe(3);
  // Within its budget, the next pass seals the rest.
  const rest = await sealDueWindows(pool, key, { ...opts, budgetMs: 60_000 });
  expect(rest.map((r) => r.leaf_count)).toEqual([2, 1]);
  expect(await countUnsealed()).toBe(0);
  await expectProofsVerify(ids);
});

test('due windows are sealed oldest first, one after another within a pass', async () => {
  const pool = h.db.pool;
  const ids = await fiveReceipts('oldest');
  // Two receipts into a window two hours ago, three into one an hour ago (issued_at is the sealing key).
  const hour = 3_600_000;
  for (const [some, ago] of [[ids.slice(3), 2 * hour], [ids.slice(0, 3), hour]] as const) {
    await pool.query(`UPDATE evidence_receipts SET issued_at = now() - $2 * interval '1 millisecond' WHERE delivery_id = ANY($1::text[])`, [some, ago]);
  }
  const roots = await sealDueWindows(pool, key, { windowMs: 60_000, before: new Date(), budgetMs: 60_000 });
  expect(roots.map((r) => r.leaf_count)).toEqual([2, 3]);
  expect(Date.parse(roots[0]!.window_start)).toBeLessThan(Date.parse(roots[1]!.window_start));
  expect(Date.parse(roots[1]!.window_start) - Date.parse(roots[0]!.window_start)).toBeGreaterThanOrEqual(hour - 60_000);
  expect(await countUnsealed()).toBe(0);
});

test('a sealer that another sealer overtook between its read and its update stores nothing; each receipt is in one root', async () => {
  const pool = h.db.pool;
  const ids = await fiveReceipts('race');
  const window = { start: new Date(0), end: new Date(Date.now() + 60_000) };
  let rival: Awaited<ReturnType<typeof sealWindow>> = null;
  // Our sealer's connection: right after it has read the receipts, a rival seals them on another connection.
  const watched = {
    connect: async () => {
      const client = await pool.connect();
      return new Proxy(client, {
        get: (target, prop, receiver) =>
          prop === 'query'
            ? async (text: string, values?: unknown[]) => {
                const out = await target.query(text, values);
                if (text === SEAL_SELECT_SQL) rival = await sealWindow(pool, key, h.tenantId, window);
                return out;
              }
            : Reflect.get(target, prop, receiver),
      });
    },
  } as unknown as typeof pool;
  const rootCount = async (): Promise<number> => (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM merkle_roots')).rows[0]!.n;
  const before = await rootCount();
  await expect(sealWindow(watched, key, h.tenantId, window)).rejects.toBeInstanceOf(ConcurrentSealError);
  expect(await rootCount()).toBe(before + 1);
  expect(rival).toMatchObject({ leaf_count: 5 });
  const { rows } = await pool.query<{ root: string; n: number }>(
    `SELECT merkle_root_id AS root, count(*)::int AS n FROM evidence_receipts WHERE delivery_id = ANY($1::text[]) GROUP BY 1`, [ids],
  );
  expect(rows).toEqual([{ root: rival!.id, n: 5 }]);
  await expectProofsVerify(ids);
});
