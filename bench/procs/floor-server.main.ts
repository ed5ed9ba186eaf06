// Baseline (c), front half: the least a durable ingest must do. Bare node:http reads the
// body, a group commit writes every waiting event in one multi-row INSERT (autocommit,
// synchronous_commit as the server has it: on), each request is answered 202 only after
// that COMMIT, and one BullMQ job per commit carries the ids to the worker. No signature,
// dedup, filter, tenant, metrics or logs: everything Hookline does beyond this is what
// the distance between the two measures.
import { randomBytes } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import { Queue } from 'bullmq';
import IORedis from 'ioredis';
import { Pool } from 'pg';
import { serveIpc } from '../lib/ipc';
import { FLOOR_TABLE, floorDdl, floorEnv } from './floor-schema';

interface Waiting {
  id: string;
  route: string;
  at: number;
  body: Buffer;
  res: ServerResponse;
}

const BATCH_MAX = 1000;
const FLUSHES_IN_FLIGHT = 2;
const env = floorEnv();
const pg = new Pool({ connectionString: env.databaseUrl, max: FLUSHES_IN_FLIGHT + 1 });
pg.on('error', () => undefined); // an idle client's lost connection must not end the process
const redis = new IORedis(env.redisUrl, { maxRetriesPerRequest: 1 });
const queue = new Queue('floor', { connection: redis, prefix: env.prefix, defaultJobOptions: { removeOnComplete: true, removeOnFail: 1000, attempts: 10, backoff: { type: 'fixed', delay: 200 } } });
const insert = `INSERT INTO "${env.schema}".${FLOOR_TABLE} (id, route, ingested_at, body) SELECT * FROM unnest($1::text[], $2::text[], $3::int8[], $4::bytea[])`;

const waiting: Waiting[] = [];
let inFlight = 0;

function answer(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

async function flush(): Promise<void> {
  const batch = waiting.splice(0, BATCH_MAX);
  inFlight++;
  try {
    await pg.query(insert, [batch.map((w) => w.id), batch.map((w) => w.route), batch.map((w) => w.at), batch.map((w) => w.body)]);
    for (const w of batch) answer(w.res, 202, `{"event_id":"${w.id}","status":"accepted"}`);
    // Committed: the job only carries the work. A lost job would leave its rows undelivered
    // in PostgreSQL for a recovery sweep, which the floor leaves out (it costs nothing while
    // no job is lost, as in the benchmark).
    queue.add('batch', { ids: batch.map((w) => w.id) }).catch(() => undefined);
  } catch {
    for (const w of batch) answer(w.res, 503, '{"status":503}');
  } finally {
    inFlight--;
    if (waiting.length && inFlight < FLUSHES_IN_FLIGHT) void flush();
  }
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    waiting.push({ id: `evt_${randomBytes(12).toString('hex')}`, route: (req.url ?? '').slice('/in/'.length), at: Date.now(), body: Buffer.concat(chunks), res });
    if (inFlight < FLUSHES_IN_FLIGHT) void flush();
  });
});
server.keepAliveTimeout = 60_000;

async function main(): Promise<void> {
  for (const sql of floorDdl(env.schema)) await pg.query(sql);
  server.listen(0, '127.0.0.1', () => {
    const addr = server.address();
    serveIpc({}, { port: typeof addr === 'object' && addr ? addr.port : 0 });
  });
}

void main();
