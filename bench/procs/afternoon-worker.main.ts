// Baseline (b), back half: a BullMQ Worker that POSTs each job with got to every target.
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'bullmq';
import IORedis from 'ioredis';
import { serveIpc } from '../lib/ipc';

// got 14 is ESM-only and ships types only through `exports`, which this project's CommonJS
// resolution does not read: the little of it we use is typed here.
interface Got {
  post(url: string, opts: { json: unknown; headers: Record<string, string>; timeout: { request: number }; retry: { limit: number } }): Promise<unknown>;
}

interface EventJob {
  eventId: string;
  ingesterId: string;
  ingestedAt: number;
  body: unknown;
}

async function main(): Promise<void> {
  // Resolved from the repository root, not from this file: the bench runs this file as a
  // bundle from a temporary folder (helper.ts), where `import('got')` would find no
  // node_modules. (The bundler rewrites __dirname to this source file's folder.)
  const specifier = pathToFileURL(createRequire(resolve(__dirname, '../../package.json')).resolve('got')).href;
  const { got } = (await import(specifier)) as { got: Got };
  // The team's routing table: ingester id -> target URLs.
  const routes = JSON.parse(process.env.AFTERNOON_ROUTES ?? '{}') as Record<string, string[]>;
  const connection = new IORedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
  const worker = new Worker<EventJob>(
    'afternoon',
    async (job) => {
      await Promise.all(
        (routes[job.data.ingesterId] ?? []).map((url) =>
          got.post(url, {
            json: job.data.body,
            headers: { 'x-service-delivery-idempotency-key': `${job.data.eventId}:${url}`, 'x-hookline-ingested-at': String(job.data.ingestedAt) },
            timeout: { request: 15_000 },
            retry: { limit: 0 },
          }),
        ),
      );
    },
    { connection, prefix: process.env.QUEUE_PREFIX ?? '{afternoon}', concurrency: Number(process.env.AFTERNOON_CONCURRENCY ?? 50) },
  );
  worker.on('error', () => undefined);
  serveIpc({}, { ready: true });
}

void main();
