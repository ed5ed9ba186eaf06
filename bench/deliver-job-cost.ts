// What a deliver job costs the deliverer, apart from what each delivery in it costs: runs
// the deliverer's own deliverBatch (claim, circuit and rate checks, requests, outcome
// writes, health record) on jobs of several sizes, one job at a time, against a receiver
// on 127.0.0.1 in its own process and the local PostgreSQL and Redis (a fresh schema and
// queue prefix), and reports this process's CPU per delivery and per job. The fixed cost of
// a job is the difference between sizes. Stops by itself.
//
//   pnpm exec tsx bench/deliver-job-cost.ts [sizes=1,17,100] [deliveries per size=3000]
import { onInterrupt } from './lib/children';
import { startHelper } from './lib/helper';
import { createHarness, type Harness } from '../test/deliverer-fixtures';

const SIZES = (process.argv[2] ?? '1,17,100').split(',').map(Number);
const PER_SIZE = Number(process.argv[3] ?? 3000);
const BODY = JSON.stringify({ type: 'invoice.paid', data: { pad: 'x'.repeat(1000) } });

// The receiver is a tracked helper process: it goes on exit, on a failure and on Ctrl-C.
// Ctrl-C also stops the runs, and the interrupt waits for main's own clean-up.
let stopping = false;
let cleanedUp: () => void = () => undefined;
const cleaned = new Promise<void>((r) => (cleanedUp = r));
setTimeout(() => {
  console.error('benchmark took too long; stopping');
  process.exit(1);
}, 600_000).unref();

/** `n` more pending deliveries to `destinationId`, copied in bulk from a delivery made by the harness. */
async function copies(h: Harness, destinationId: string, n: number): Promise<string[]> {
  const one = await h.delivery(destinationId, { body: BODY, contentType: 'application/json', type: 'invoice.paid' });
  const p = h.db.pool;
  await p.query(
    `INSERT INTO events (id, tenant_id, ingester_id, status, received_at, dedup_key, type, updated_at, correlation_id)
     SELECT 'evt_j' || g, tenant_id, ingester_id, 'filtered', now(), 'k' || g, type, now(), 'c' || g FROM events, generate_series(1, $1) g WHERE id = $2`,
    [n, one.eventId],
  );
  await p.query(
    `INSERT INTO event_payloads (event_id, tenant_id, body, content_type, headers, query)
     SELECT 'evt_j' || g, tenant_id, body, content_type, headers, query FROM event_payloads, generate_series(1, $1) g WHERE event_id = $2`,
    [n, one.eventId],
  );
  await p.query(
    `INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id)
     SELECT 'dlv_j' || g, tenant_id, 'evt_j' || g, flow_id, destination_id FROM deliveries, generate_series(1, $1) g WHERE id = $2`,
    [n, one.deliveryId],
  );
  for (const t of ['events', 'event_payloads', 'deliveries']) await p.query(`VACUUM ANALYZE ${t}`);
  return Array.from({ length: n }, (_, i) => `dlv_j${i + 1}`);
}

async function main(): Promise<void> {
  // The HTTP-ceiling baseline's server: reads the body, answers 202.
  const receiver = await startHelper<{ port: number }>('receiver', 'bench/procs/bare-http.main.ts');
  const h = await createHarness('jobcost');
  const unhook = onInterrupt(() => {
    stopping = true;
    return cleaned;
  });
  try {
    const dst = await h.destination(`http://127.0.0.1:${receiver.hello.port}/hook`);
    const warmup = 50 * 17;
    const ids = await copies(h, dst.id, warmup + 2 * SIZES.reduce((n, s) => n + Math.floor(PER_SIZE / s) * s, 0));
    let next = 0;
    const take = (n: number): string[] => ids.slice(next, (next += n));
    const run = async (size: number, jobs: number): Promise<void> => {
      for (let j = 0; j < jobs; j++) {
        if (stopping) throw new Error('interrupted');
        const s = await h.run(take(size));
        if (s.delivered !== size) throw new Error(`a job of ${size} delivered ${s.delivered}`);
      }
    };
    console.error(`warming up (50 jobs of 17)…`);
    await run(17, 50);
    console.log('round  job size  jobs  CPU µs/delivery  CPU ms/job  wall ms/job');
    for (const round of [1, 2])
      for (const size of SIZES) {
        const jobs = Math.floor(PER_SIZE / size);
        const cpu0 = process.cpuUsage();
        const t0 = performance.now();
        await run(size, jobs);
        const cpu = process.cpuUsage(cpu0);
        const cpuMs = (cpu.user + cpu.system) / 1000;
        const wallMs = performance.now() - t0;
        console.log(
          `${String(round).padStart(5)}  ${String(size).padStart(8)}  ${String(jobs).padStart(4)}  ${((cpuMs * 1000) / (jobs * size)).toFixed(0).padStart(15)}  ${(cpuMs / jobs).toFixed(2).padStart(10)}  ${(wallMs / jobs).toFixed(2).padStart(11)}`,
        );
      }
  } finally {
    await h.close(); // drops the schema and the queue prefix
    await receiver.child.kill();
    unhook();
    cleanedUp();
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    if (!stopping) console.error(err);
    process.exit(stopping ? 130 : 1);
  },
);
