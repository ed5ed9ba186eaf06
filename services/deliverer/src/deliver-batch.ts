import { retryTransient, type Pool } from '@hookline/db';
import { buildHeaders, decide, groupBy, destinationSettings, notSent, openSecrets, signatureHeaders, type BackoffPolicy, type Breaker, type DeliveryDefaults, type Outcome, type SendResult } from '@hookline/delivery';
import type { Logger } from '@hookline/logger';
import type { JobData, Producer, Redis } from '@hookline/queues';
import type { Limiter } from './limiter';
import { releaseDeliveries, renewLeases } from './claim-deliveries';
import type { CoalescedDb } from './coalesced-db';
import { gateDeliveries, type Prepared } from './gate-deliveries';
import type { HttpSender } from './http-sender';
import { createOutcomeRecorder } from './outcome-recorder';
import { recordHealth } from './record-health';

export interface DeliverDeps {
  pool: Pool;
  /** Claim and record, merged across concurrent jobs. */
  db: CoalescedDb;
  /**
   * Deliveries held claimed at once by this process (DELIVERER_MAX_CLAIMED). A deliver job
   * can name thousands (a route job of 500 events at fan-out 5 makes one of 2,500); claimed
   * whole, 64 such jobs held every body and lease in memory while the sender worked through
   * them, and the leases ran down meanwhile.
   */
  claimBudget: Limiter;
  /** A non-blocking connection for the breaker and rate-limit scripts. */
  redis: Redis;
  producer: Producer;
  prefix: string;
  sender: HttpSender;
  breaker: Breaker;
  openSecret: (sealed: string) => string | null;
  logger: Logger;
  defaults: DeliveryDefaults;
  backoff: BackoffPolicy;
  leaseMs: number;
  /** Outcomes completed within this of each other are recorded together. */
  recordLingerMs: number;
  claimSlackMs: number;
  disableAfterMs: number;
  /** Names this process in `lease_owner`. */
  instanceId: string;
}

export interface BatchSummary {
  claimed: number;
  deferred: number;
  delivered: number;
  failed: number;
  exhausted: number;
}

async function sendOne(deps: DeliverDeps, p: Prepared, traceparent: string | undefined): Promise<SendResult> {
  const { d, settings } = p;
  if (!d.body) return notSent('payload_missing');
  // Fail closed, as ingest does: a destination that has a secret never gets an unsigned
  // (or half-signed) request. Retried like any failure, then the DLQ (replay once fixed).
  const secrets = openSecrets(deps.openSecret, d.secrets);
  if (!secrets) return notSent('signing_unavailable');
  const body = d.body;
  // Signed when the request leaves (signHeaders), not now: it may first wait for a slot.
  const headers = buildHeaders({
    deliveryId: d.id,
    eventId: d.eventId,
    eventType: d.eventType,
    correlationId: d.correlationId,
    receivedAt: d.receivedAt,
    body,
    contentType: d.contentType,
    secrets: [],
    customHeaders: settings.headers,
    traceparent,
  });
  const mtlsKey = settings.mtls?.keySealed ? deps.openSecret(settings.mtls.keySealed) : null;
  const signHeaders = (): Record<string, string> => signatureHeaders(secrets, d.id, body);
  return deps.sender.send({ destinationId: d.destinationId, url: d.url, settings, mtlsKey, signHeaders }, headers, body);
}

/** Delayed jobs are hints: if one cannot be added, the recovery sweep finds the delivery. */
async function enqueue(deps: DeliverDeps, deliveryIds: string[], delayMs: number): Promise<void> {
  try {
    await deps.producer.add('deliver', { v: 1, deliveryIds }, { delayMs: Math.max(0, Math.round(delayMs)) });
  } catch (err) {
    deps.logger.warn('could not enqueue a deliver job; recovery will pick it up', { count: deliveryIds.length, error: (err as Error).message });
  }
}

/** Ids claimed together at most: a job's ids are claimed in chunks of this many, each within the claim budget. */
export const CLAIM_CHUNK = 100;

/**
 * One `deliver` job, in chunks of CLAIM_CHUNK ids, each claimed once the process's claim
 * budget has room for it. Every chunk runs to the end; the job fails (and BullMQ retries
 * it: a retry claims only what is still claimable) if any chunk failed.
 */
export async function deliverBatch(deps: DeliverDeps, job: JobData['deliver']): Promise<BatchSummary> {
  const size = Math.min(CLAIM_CHUNK, deps.claimBudget.limit);
  const parts: string[][] = [];
  for (let i = 0; i < job.deliveryIds.length; i += size) parts.push(job.deliveryIds.slice(i, i + size));
  const settled = await Promise.allSettled(parts.map((ids) => deps.claimBudget.run(() => deliverChunk(deps, ids, job.traceparent), ids.length)));
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  const summary: BatchSummary = { claimed: 0, deferred: 0, delivered: 0, failed: 0, exhausted: 0 };
  for (const s of settled) if (s.status === 'fulfilled') for (const k of Object.keys(summary) as (keyof BatchSummary)[]) summary[k] += s.value[k];
  return summary;
}

/**
 * One chunk: claim the due deliveries among its ids, hold back those a circuit or rate
 * limit refuses (no attempt consumed), send the rest concurrently, record every attempt
 * and outcome as the requests complete, and schedule the retries.
 */
async function deliverChunk(deps: DeliverDeps, deliveryIds: string[], traceparent: string | undefined): Promise<BatchSummary> {
  const { leaseOwner, claimed } = await deps.db.claim(deliveryIds);
  const summary: BatchSummary = { claimed: claimed.length, deferred: 0, delivered: 0, failed: 0, exhausted: 0 };
  if (claimed.length === 0) return summary;

  const prepared = claimed.map((d) => ({ d, settings: destinationSettings(d.method, d.config, deps.defaults) }));
  const { allowed, deferred } = await gateDeliveries(deps, prepared);
  if (deferred.length > 0) {
    summary.deferred = deferred.length;
    await releaseDeliveries(deps.pool, leaseOwner, deferred.map((x) => ({ id: x.item.d.id, delayMs: x.delayMs })));
    for (const [delay, group] of groupBy(deferred, (x) => String(x.delayMs))) await enqueue(deps, group.map((x) => x.item.d.id), Number(delay));
  }
  if (allowed.length === 0) return summary;

  // While requests are out and their outcomes are being written, the lease is renewed, so
  // recovery never takes back a delivery that is still in flight (a crashed process stops
  // renewing).
  const heldIds = allowed.map((p) => p.d.id);
  const renewal = setInterval(() => void renewLeases(deps.pool, leaseOwner, heldIds, deps.leaseMs).catch(() => undefined), Math.max(250, deps.leaseMs / 3));
  // Each outcome is recorded as its request completes. A write that fails because
  // PostgreSQL went away, or was chosen as a deadlock victim (one call, rolled back whole),
  // is retried while the lease would still hold: the receiver already has the request, and
  // giving up would send it again once the lease expired.
  const recorder = createOutcomeRecorder(
    (outcomes) =>
      retryTransient(() => deps.db.record({ leaseOwner, outcomes }), {
        deadlineMs: deps.leaseMs / 2,
        onRetry: (err, attempt) => deps.logger.warn('could not record outcomes; retrying', { count: outcomes.length, attempt, error: (err as Error).message }),
      }),
    deps.recordLingerMs,
  );
  const outcomes: Outcome[] = [];
  const results = await Promise.all(
    allowed.map(async (p) => {
      const result = await sendOne(deps, p, traceparent);
      const attemptNumber = p.d.attemptCount + 1;
      const outcome: Outcome = { deliveryId: p.d.id, tenantId: p.d.tenantId, eventId: p.d.eventId, attemptNumber, result, decision: decide(p.settings, deps.backoff, result, attemptNumber, p.d.replayCount, Date.now()) };
      outcomes.push(outcome);
      recorder.add(outcome);
      return result;
    }),
  );
  await recorder.finish().finally(() => clearInterval(renewal));
  await recordHealth(deps, allowed.map((p, i) => ({ destinationId: p.d.destinationId, result: results[i]! })));

  const retries: Promise<void>[] = [];
  for (const o of outcomes) {
    summary[o.decision.status]++;
    if (o.decision.status === 'failed') retries.push(enqueue(deps, [o.deliveryId], o.decision.delayMs));
  }
  await Promise.all(retries);
  deps.logger.debug('deliver batch done', { ...summary });
  return summary;
}
