// Baseline (b), front half: what a team writes in an afternoon. express + express.json(),
// then BullMQ Queue.add with the whole event in the job; no persistence, no batching.
import { randomUUID } from 'node:crypto';
import express from 'express';
import { Queue } from 'bullmq';
import IORedis from 'ioredis';
import { serveIpc } from '../lib/ipc';

const connection = new IORedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
const queue = new Queue('afternoon', { connection, prefix: process.env.QUEUE_PREFIX ?? '{afternoon}', defaultJobOptions: { removeOnComplete: true, removeOnFail: 1000, attempts: 5, backoff: { type: 'exponential', delay: 500 } } });

const app = express();
app.use(express.json({ limit: '256kb' }));
app.post('/in/:id', async (req, res) => {
  const eventId = `evt_${randomUUID()}`;
  await queue.add('event', { eventId, ingesterId: req.params.id, ingestedAt: Date.now(), body: req.body as unknown });
  res.status(202).json({ event_id: eventId });
});
const server = app.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  serveIpc({}, { port: typeof addr === 'object' && addr ? addr.port : 0 });
});
