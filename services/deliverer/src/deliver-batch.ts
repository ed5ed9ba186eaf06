import type { Pool } from '@hookline/db';
import { buildHeaders, decide, destinationSettings, notSent, openSecrets, signatureHeaders, type BackoffPolicy, type Breaker, type DeliveryDefaults, type Outcome, type SendResult } from '@hookline/delivery';
import type { Logger } from '@hookline/logger';
import type { JobData, Producer, Redis } from '@hookline/queues';
import type { Limiter } from './limiter';
import { renewLeases } from './claim-deliveries';
import type { CircuitView } from './circuit-view';
import type { CoalescedDb } from './coalesced-db';
import { clearToSend, gateDeliveries, type Prepared } from './gate-deliveries';
import type { HttpSender } from './http-sender';
import type { RateTokens } from './rate-tokens';
import { createOutcomeRecorder } from './outcome-recorder';
import { giveBack, writeFinished, type Finished } from './settle-deliveries';

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
  /** The circuits as this process last heard them (viewCircuits: the breaker above updates it). */
  circuits: CircuitView;
  /** Each request's rate token, taken in its slot (redisRateTokens: pauses after a Redis failure). */
  rateTokens: RateTokens;
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

/** Sends one delivery when its slot comes, unless refused there: then when it is due again (ms epoch). */
async function sendOne(deps: DeliverDeps, p: Prepared, traceparent: string | undefined): Promise<{ result: SendResult } | { dueAt: number }> {
  const { d, settings } = p;
  if (!d.body) return { result: notSent('payload_missing') };
  // Fail closed, as ingest does: a destination that has a secret never gets an unsigned
  // (or half-signed) request. Retried like any failure, then the DLQ (replay once fixed).
  const secrets = openSecrets(deps.openSecret, d.secrets);
  if (!secrets) return { result: notSent('signing_unavailable') };
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
  const signHeaders = (nowMs: number): Record<string, string> => signatureHeaders(secrets, d.id, body, Math.floor(nowMs / 1000));
  // The circuit and the rate limit are asked in the slot too, for the same reason.
  const cleared = await deps.sender.sendWhenClear({ destinationId: d.destinationId, url: d.url, settings, mtlsKey, signHeaders }, headers, body, (now) => clearToSend(deps, p, now));
  return 'sent' in cleared ? { result: cleared.sent } : { dueAt: cleared.refused };
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
 * One chunk: claim the due deliveries among its ids, hold back those a circuit or the
 * admission rate refuses (no attempt consumed), queue the rest for sending; each request
 * asks the circuit and the rate limit again in its slot right before it leaves, and is
 * given back unsent if refused there. Attempts and outcomes are recorded as the requests
 * complete, each write followed by its retries' jobs and its circuits' health.
 */
async function deliverChunk(deps: DeliverDeps, deliveryIds: string[], traceparent: string | undefined): Promise<BatchSummary> {
  const { leaseOwner, claimed } = await deps.db.claim(deliveryIds);
  const summary: BatchSummary = { claimed: claimed.length, deferred: 0, delivered: 0, failed: 0, exhausted: 0 };
  if (claimed.length === 0) return summary;

  const prepared = claimed.map((d) => ({ d, settings: destinationSettings(d.method, d.config, deps.defaults) }));
  const now = Date.now();
  const { allowed, deferred } = await gateDeliveries(deps, prepared, now);
  summary.deferred = deferred.length;
  await giveBack(deps, leaseOwner, deferred.map((x) => ({ id: x.item.d.id, dueAt: now + x.delayMs })));
  if (allowed.length === 0) return summary;

  // While requests are out and their outcomes are being written, the lease is renewed, so
  // recovery never takes back a delivery that is still in flight (a crashed process stops
  // renewing). Deliveries already recorded or given back are no longer this lease's.
  const heldIds = allowed.map((p) => p.d.id);
  const renewal = setInterval(() => void renewLeases(deps.pool, leaseOwner, heldIds, deps.leaseMs).catch(() => undefined), Math.max(250, deps.leaseMs / 3));
  const recorder = createOutcomeRecorder<Finished>((items) => writeFinished(deps, leaseOwner, items), deps.recordLingerMs);
  try {
    await Promise.all(
      allowed.map(async (p) => {
        const sent = await sendOne(deps, p, traceparent);
        if ('dueAt' in sent) {
          summary.deferred++;
          recorder.add({ givenBack: p.d.id, dueAt: sent.dueAt });
          return;
        }
        const attemptNumber = p.d.attemptCount + 1;
        const outcome: Outcome = { deliveryId: p.d.id, tenantId: p.d.tenantId, eventId: p.d.eventId, attemptNumber, result: sent.result, decision: decide(p.settings, deps.backoff, sent.result, attemptNumber, { replayCount: p.d.replayCount, roundStartAttempt: p.d.roundStartAttempt }, Date.now()) };
        summary[outcome.decision.status]++;
        recorder.add({ outcome, destinationId: p.d.destinationId });
      }),
    );
    await recorder.finish();
  } finally {
    clearInterval(renewal);
  }
  deps.logger.debug('deliver batch done', { ...summary });
  return summary;
}
