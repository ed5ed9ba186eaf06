import type { Pool } from '@hookline/db';
import { buildHeaders, decide, destinationSettings, notSent, openSecrets, signatureHeaders, warnUnsendableHeaders, type BackoffPolicy, type Breaker, type DeliveryDefaults, type Outcome, type SendResult } from '@hookline/delivery';
import type { Logger } from '@hookline/logger';
import type { JobData, Producer, Redis } from '@hookline/queues';
import type { Limiter } from './limiter';
import { renewLeases } from './claim-deliveries';
import type { CircuitView } from './circuit-view';
import type { ClaimShares } from './claim-shares';
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
   * them, and the leases ran down meanwhile. A chunk's units are freed as its deliveries
   * stop being claimed (not claimable, given back, recorded), not only when it ends.
   */
  claimBudget: Limiter;
  /**
   * Claimed deliveries counted per destination and per tenant, each within its share of
   * the claim budget (DELIVERER_DESTINATION_MAX_SHARE, DELIVERER_TENANT_MAX_SHARE); beyond
   * it they are given back unsent, so a slow destination's backlog cannot hold the budget
   * every other destination's deliveries need.
   */
  claimShares: ClaimShares;
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
  const target = { destinationId: d.destinationId, tenantId: d.tenantId, url: d.url, settings, mtlsKey, signHeaders };
  const cleared = await deps.sender.sendWhenClear(target, headers, body, (now) => clearToSend(deps, p, now));
  if (!('sent' in cleared)) return { dueAt: cleared.refused };
  deps.claimShares.observe(d.destinationId, cleared.sent.durationMs);
  return { result: cleared.sent };
}

/**
 * Ids claimed together at most: a job's ids are claimed in chunks of this many (fewer when
 * the budget beside one destination's share is smaller: ClaimShares.chunkMax), each within
 * the claim budget.
 */
export const CLAIM_CHUNK = 100;

/**
 * `fn` holding `n` units of `budget` (at most its limit), taken in arrival order; `fn` frees
 * units as the deliveries they stand for stop being claimed (`free`), the rest when it ends.
 */
async function inBudget<T>(budget: Limiter, n: number, fn: (free: (units: number) => void) => Promise<T>): Promise<T> {
  let held = Math.max(0, Math.min(n, budget.limit));
  await budget.acquire(held);
  const free = (units: number): void => {
    const k = Math.min(Math.max(0, units), held);
    held -= k;
    if (k > 0) budget.release(k);
  };
  try {
    return await fn(free);
  } finally {
    free(held);
  }
}

/**
 * One `deliver` job, in chunks of CLAIM_CHUNK ids, each claimed once the process's claim
 * budget has room for it. Every chunk runs to the end; the job fails (and BullMQ retries
 * it: a retry claims only what is still claimable) if any chunk failed.
 */
export async function deliverBatch(deps: DeliverDeps, job: JobData['deliver']): Promise<BatchSummary> {
  const size = Math.min(CLAIM_CHUNK, deps.claimBudget.limit, deps.claimShares.chunkMax);
  const parts: string[][] = [];
  for (let i = 0; i < job.deliveryIds.length; i += size) parts.push(job.deliveryIds.slice(i, i + size));
  const settled = await Promise.allSettled(parts.map((ids) => inBudget(deps.claimBudget, ids.length, (free) => deliverChunk(deps, ids, job.traceparent, free))));
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  const summary: BatchSummary = { claimed: 0, deferred: 0, delivered: 0, failed: 0, exhausted: 0 };
  for (const s of settled) if (s.status === 'fulfilled') for (const k of Object.keys(summary) as (keyof BatchSummary)[]) summary[k] += s.value[k];
  return summary;
}

/**
 * One chunk: claim the due deliveries among its ids; give back unsent (no attempt
 * consumed) those beyond their destination's or tenant's share of the claim budget
 * (ClaimShares), then those a circuit or the admission rate refuses; queue the rest for
 * sending; each request asks the circuit and the rate limit again in its slot right before
 * it leaves, and is given back unsent if refused there. Attempts and outcomes are recorded
 * as the requests complete, each write followed by its retries' jobs and its circuits'
 * health. The chunk's claim budget (`free`) and shares are given up delivery by delivery,
 * as each stops being claimed.
 */
async function deliverChunk(deps: DeliverDeps, deliveryIds: string[], traceparent: string | undefined, free: (units: number) => void): Promise<BatchSummary> {
  const { leaseOwner, claimed } = await deps.db.claim(deliveryIds);
  free(deliveryIds.length - claimed.length);
  const summary: BatchSummary = { claimed: claimed.length, deferred: 0, delivered: 0, failed: 0, exhausted: 0 };
  if (claimed.length === 0) return summary;

  const prepared: Prepared[] = claimed.map((d) => ({ d, settings: destinationSettings(d.method, d.config, deps.defaults) }));
  // Header values that cannot be sent (stored before the API refused them) are left out of
  // the request, not sent to fail it: said once per destination.
  for (const p of prepared) warnUnsendableHeaders(deps.logger, p.d.destinationId, p.settings);
  const now = Date.now();
  // Shares first, before the gate: the gate's admissions (a half-open circuit's probe, the
  // admission counter) must not be spent on deliveries then given back for want of a share.
  const { kept, over } = deps.claimShares.take(prepared, now);
  const holding = new Map(kept.map((p) => [p.d.id, p]));
  const done = (ids: string[]): void => {
    let n = 0;
    for (const id of ids) {
      const p = holding.get(id);
      if (!p) continue;
      holding.delete(id);
      deps.claimShares.release(p);
      n++;
    }
    free(n);
  };
  try {
    const { allowed, deferred } = kept.length === 0 ? { allowed: [], deferred: [] } : await gateDeliveries(deps, kept, now);
    summary.deferred = over.length + deferred.length;
    if (over.length > 0) deps.logger.debug('deliveries over their destination\'s or tenant\'s share of the claim budget given back', { count: over.length, due_in_ms: over[0]!.dueAt - now });
    await giveBack(deps, leaseOwner, [...over.map((x) => ({ id: x.item.d.id, dueAt: x.dueAt })), ...deferred.map((x) => ({ id: x.item.d.id, dueAt: now + x.delayMs }))]);
    free(over.length);
    done(deferred.map((x) => x.item.d.id));
    if (allowed.length === 0) return summary;
    await sendChunk(deps, leaseOwner, allowed, traceparent, summary, done);
  } finally {
    // What a failed write left claimed waits for its lease to run out; it is not counted here any more.
    for (const p of holding.values()) deps.claimShares.release(p);
    holding.clear();
  }
  deps.logger.debug('deliver batch done', { ...summary });
  return summary;
}

const finishedId = (f: Finished): string => ('outcome' in f ? f.outcome.deliveryId : f.givenBack);

/** Sends a chunk's admitted deliveries and records each as it completes; `done` once its write has committed. */
async function sendChunk(deps: DeliverDeps, leaseOwner: string, allowed: Prepared[], traceparent: string | undefined, summary: BatchSummary, done: (ids: string[]) => void): Promise<void> {
  // While requests are out and their outcomes are being written, the lease is renewed, so
  // recovery never takes back a delivery that is still in flight (a crashed process stops
  // renewing). Deliveries already recorded or given back are no longer this lease's.
  const heldIds = allowed.map((p) => p.d.id);
  const renewal = setInterval(() => void renewLeases(deps.pool, leaseOwner, heldIds, deps.leaseMs).catch(() => undefined), Math.max(250, deps.leaseMs / 3));
  const recorder = createOutcomeRecorder<Finished>(async (items) => {
    await writeFinished(deps, leaseOwner, items);
    done(items.map(finishedId));
  }, deps.recordLingerMs);
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
}
