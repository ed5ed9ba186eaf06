// Baseline (c), back half: a BullMQ Worker takes a commit's ids, reads the rows not yet
// delivered (one SELECT), POSTs each body as received to every target of its route with
// undici's Pool (the client Hookline's deliverer uses), and marks the events whose every
// target answered 2xx delivered (one UPDATE). A job with a failure is retried by BullMQ;
// it then sends only what is still undelivered. No claim, attempt log, signature, retry
// schedule, breaker, rate limit, receipt or status roll-up.
import { Worker } from 'bullmq';
import IORedis from 'ioredis';
import { Pool as PgPool } from 'pg';
import { Pool } from 'undici';
import { serveIpc } from '../lib/ipc';
import { FLOOR_TABLE, floorEnv } from './floor-schema';

interface Row {
  id: string;
  route: string;
  ingested_at: string;
  body: Buffer;
}

const env = floorEnv();
// The team's routing table: route -> target URLs (all on the bench receiver's origin).
const routes = JSON.parse(process.env.FLOOR_ROUTES ?? '{}') as Record<string, string[]>;
const pg = new PgPool({ connectionString: env.databaseUrl, max: 4 });
pg.on('error', () => undefined); // an idle client's lost connection must not end the process
const pools = new Map<string, Pool>();
const poolFor = (origin: string): Pool => {
  let p = pools.get(origin);
  if (!p) pools.set(origin, (p = new Pool(origin, { connections: 128, pipelining: 1, keepAliveTimeout: 60_000 })));
  return p;
};
const table = `"${env.schema}".${FLOOR_TABLE}`;

async function send(url: URL, row: Row, i: number): Promise<boolean> {
  const res = await poolFor(url.origin).request({
    method: 'POST',
    path: url.pathname,
    body: row.body,
    headers: { 'content-type': 'application/json', 'x-service-delivery-idempotency-key': `${row.id}:${i}`, 'x-hookline-ingested-at': row.ingested_at },
    headersTimeout: 15_000,
    bodyTimeout: 15_000,
  });
  await res.body.dump();
  return res.statusCode >= 200 && res.statusCode < 300;
}

async function deliver(ids: string[]): Promise<void> {
  const { rows } = await pg.query<Row>(`SELECT id, route, ingested_at::text, body FROM ${table} WHERE id = ANY($1) AND delivered_at IS NULL`, [ids]);
  const outcomes = await Promise.all(
    rows.map(async (row) => {
      const targets = (routes[row.route] ?? []).map((u) => new URL(u));
      const ok = await Promise.all(targets.map((u, i) => send(u, row, i).catch(() => false)));
      return ok.every(Boolean) ? row.id : null;
    }),
  );
  const delivered = outcomes.filter((id): id is string => id !== null);
  if (delivered.length) await pg.query(`UPDATE ${table} SET delivered_at = now() WHERE id = ANY($1)`, [delivered]);
  if (delivered.length < rows.length) throw new Error(`${rows.length - delivered.length} events not delivered`);
}

const connection = new IORedis(env.redisUrl, { maxRetriesPerRequest: null });
const worker = new Worker<{ ids: string[] }>('floor', (job) => deliver(job.data.ids), { connection, prefix: env.prefix, concurrency: Number(process.env.FLOOR_CONCURRENCY ?? 16) });
worker.on('error', () => undefined);
serveIpc({}, { ready: true });
