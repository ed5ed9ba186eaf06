// The router's recovery sweep ages events by validated_at, which ingest's INSERT sets with
// PostgreSQL's now() (services/ingest/src/write-batch.ts), the clock the sweep compares
// with; received_at is the ingest host's clock.
import type { JobData } from '@hookline/queues';
import { newId } from '@hookline/db';
import type { TestDatabase } from '@hookline/testing';
import { recoverEvents, type RecoverDeps } from '../services/router/src/recover-events';
import { ingesterWithFlow, openRouterTest, type RouterTestContext } from './router-fixtures';

let t: RouterTestContext;
let db: TestDatabase;
let deps: RecoverDeps;
let tenantId: string;
let ingesterId: string;

beforeAll(async () => {
  t = await openRouterTest('rrecclock');
  ({ db, tenantId } = t);
  deps = { pool: db.pool, producer: t.producer, logger: t.logger };
  ingesterId = await ingesterWithFlow(t);
});

afterAll(() => t.close());

const routeJobs = (): Promise<Array<JobData['route']>> => t.waitingJobs('route');

/** A validated event as ingest writes it: received_at from the host's clock (`hostSkewMs` off), validated_at by the database, `ageMs` ago. */
async function insertValidated(ageMs: number, hostSkewMs: number): Promise<string> {
  const id = newId('evt');
  await db.pool.query(
    `INSERT INTO events (id, tenant_id, ingester_id, type, status, correlation_id, received_at, validated_at)
     VALUES ($1, $2, $3, 'invoice.paid', 'validated', $1, now() - ($4::int - $5::int) * interval '1 millisecond', now() - $4::int * interval '1 millisecond')`,
    [id, tenantId, ingesterId, ageMs, hostSkewMs],
  );
  return id;
}

test('an event is recovered by how long ago the database validated it, whatever the ingest host clock said', async () => {
  // Host clock 10 minutes behind: received_at looks old, but the event was validated just now.
  const justNowSlowHost = await insertValidated(0, -600_000);
  // Host clock 10 minutes ahead: received_at is in the future, but the event waits for a minute.
  const staleFastHost = await insertValidated(60_000, 600_000);
  // A correct clock, stale.
  const stale = await insertValidated(60_000, 0);
  // A row without validated_at (written before ingest set it) is aged by received_at.
  const legacy = newId('evt');
  await db.pool.query(
    `INSERT INTO events (id, tenant_id, ingester_id, status, correlation_id, received_at) VALUES ($1, $2, $3, 'validated', $1, now() - interval '1 minute')`,
    [legacy, tenantId, ingesterId],
  );

  const out = await recoverEvents(deps, { olderThanMs: 30_000, limit: 1000 });

  expect(out.eventIds.sort()).toEqual([staleFastHost, stale, legacy].sort());
  expect(out.eventIds).not.toContain(justNowSlowHost);
  expect((await routeJobs()).flatMap((j) => j.eventIds).sort()).toEqual([staleFastHost, stale, legacy].sort());
});
