// What a deliver job costs the deliverer, apart from what each delivery in it costs: runs
// the deliverer's own deliverBatch (claim, circuit and rate checks, requests, outcome
// writes, health record) on jobs of several sizes, one job at a time, against a receiver
// on 127.0.0.1 in its own process and the local PostgreSQL and Redis (a fresh schema and
// queue prefix), and reports this process's CPU per delivery and per job. The fixed cost of
// a job is the difference between sizes. Stops by itself.
//
//   pnpm exec tsx bench/deliver-job-cost.ts [sizes=1,17,100] [deliveries per size=3000]
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '@hookline/testing';
import { createHarness } from '../test/deliverer-fixtures';

const SIZES = (process.argv[2] ?? '1,17,100').split(',').map(Number);
const PER_SIZE = Number(process.argv[3] ?? 3000);
const BODY = JSON.stringify({ type: 'invoice.paid', data: { pad: 'x'.repeat(1000) } });

const RECEIVER = (port: number): string =>
  `require('node:http').createServer((q, s) => { q.resume(); q.on('end', () => { s.writeHead(200, { 'content-type': 'text/plain' }); s.end('ok'); }); }).listen(${port}, '127.0.0.1');`;
let receiver: ChildProcess | undefined;
let stopping = false;

setTimeout(() => {
  console.error('benchmark took too long; stopping');
  receiver?.kill();
  process.exit(1);
}, 600_000).unref();
// Ctrl-C: the job in progress finishes, then the usual clean-up (receiver, queues, schema).
process.on('SIGINT', () => {
  stopping = true;
  console.error('interrupted; cleaning up');
});

/** `n` more pending deliveries to `destinationId`, copied in bulk from a delivery made by the harness. */
async function copies(h: Awaited<ReturnType<typeof createHarness>>, destinationId: string, n: number): Promise<string[]> {
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
  const port = await freePort();
  receiver = spawn(process.execPath, ['-e', RECEIVER(port)], { stdio: 'inherit' });
  const h = await createHarness('jobcost');
  try {
    const dst = await h.destination(`http://127.0.0.1:${port}/hook`);
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
    receiver.kill();
    await h.close(); // drops the schema and the queue prefix
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    console.error(err);
    process.exit(1);
  },
);
