import { newId, retryTransient } from '@hookline/db';
import { groupBy, type Outcome } from '@hookline/delivery';
import { releaseDeliveries } from './claim-deliveries';
import type { DeliverDeps } from './deliver-batch';
import { recordHealth } from './record-health';

/**
 * What became of an admitted delivery at its turn to leave: an attempt (`outcome`), or
 * refused in its slot (circuit open, rate limit) and given back unsent, due at `dueAt`
 * (ms epoch).
 */
export type Finished = { outcome: Outcome; destinationId: string } | { givenBack: string; dueAt: number };

/** Delayed jobs are hints: if one cannot be added, the recovery sweep finds the delivery. */
async function enqueue(deps: DeliverDeps, deliveryIds: string[], delayMs: number): Promise<void> {
  try {
    await deps.producer.add('deliver', { v: 1, deliveryIds }, { delayMs });
  } catch (err) {
    deps.logger.warn('could not enqueue a deliver job; recovery will pick it up', { count: deliveryIds.length, error: (err as Error).message });
  }
}

/** One delayed `deliver` job per distinct delay, naming every delivery due after it. */
async function enqueueDue(deps: DeliverDeps, due: { id: string; delayMs: number }[]): Promise<void> {
  const byDelay = groupBy(due, (x) => String(Math.max(0, Math.round(x.delayMs))));
  await Promise.all([...byDelay].map(([delay, group]) => enqueue(deps, group.map((x) => x.id), Number(delay))));
}

/**
 * A write of this chunk's (one statement or one call), retried while it fails because
 * PostgreSQL went away or chose it as a deadlock victim (rolled back whole), for as long as
 * the lease would still hold (half of it).
 */
function retryWhileLeased(deps: DeliverDeps, what: string, count: number, write: () => Promise<unknown>): Promise<unknown> {
  return retryTransient(write, {
    deadlineMs: deps.leaseMs / 2,
    onRetry: (err, attempt) => deps.logger.warn(`could not ${what}; retrying`, { count, attempt, error: (err as Error).message }),
  });
}

/**
 * Gives deliveries back without an attempt (the claim-time gate held them back, or they
 * were refused in their slot): the lease dropped, due again at `dueAt`, and a delayed job
 * for then. The write is retried as outcome writes are (retryWhileLeased): given up, the
 * chunk's job would fail and its deliveries wait for their lease to run out. Running it
 * again is harmless: a row already given back has no lease_owner left to match.
 */
export async function giveBack(deps: DeliverDeps, leaseOwner: string, items: { id: string; dueAt: number }[]): Promise<void> {
  if (items.length === 0) return;
  const now = Date.now();
  const due = items.map((i) => ({ id: i.id, delayMs: i.dueAt - now }));
  await retryWhileLeased(deps, 'give deliveries back', due.length, () => releaseDeliveries(deps.pool, leaseOwner, due));
  await enqueueDue(deps, due);
}

/**
 * One write of a chunk's recorder: the attempts made (recordSent) and the deliveries given
 * back unsent, as they completed.
 */
export async function writeFinished(deps: DeliverDeps, leaseOwner: string, items: Finished[]): Promise<void> {
  const sent = items.flatMap((i) => ('outcome' in i ? [i] : []));
  const back = items.flatMap((i) => ('givenBack' in i ? [{ id: i.givenBack, dueAt: i.dueAt }] : []));
  await Promise.all([recordSent(deps, leaseOwner, sent), giveBack(deps, leaseOwner, back)]);
}

/**
 * Records attempts and outcomes in one call. A write that fails because PostgreSQL went
 * away, or was chosen as a deadlock victim (one call, rolled back whole), is retried while
 * the lease would still hold (retryWhileLeased): the receiver already has the request, and
 * giving up would send it again once the lease expired. Once it has committed, not after
 * the chunk's slowest request, the failed deliveries' retries are enqueued (their
 * next_attempt_at is set by this write) and their destinations' circuits hear of the
 * results, once, however many tries the write took.
 *
 * A connection lost after the COMMIT reached PostgreSQL, before its reply came back, fails
 * the try although the call committed: the attempts' ids are therefore made here, once per
 * outcome before the first try, and every retry passes the same ones, which the function
 * inserts only once (migration 20261201000000_attempts_once). The rest of the call is
 * harmless to repeat: the deliveries' update matches only the lease the first call dropped,
 * and the events' roll-up reads the deliveries as they are.
 */
async function recordSent(deps: DeliverDeps, leaseOwner: string, sent: { outcome: Outcome; destinationId: string }[]): Promise<void> {
  if (sent.length === 0) return;
  const outcomes = sent.map((s) => ({ ...s.outcome, attemptId: s.outcome.attemptId ?? newId('att') }));
  await retryWhileLeased(deps, 'record outcomes', outcomes.length, () => deps.db.record({ leaseOwner, outcomes }));
  const retries = outcomes.flatMap((o) => (o.decision.status === 'failed' ? [{ id: o.deliveryId, delayMs: o.decision.delayMs }] : []));
  await Promise.all([enqueueDue(deps, retries), recordHealth(deps, sent.map((s) => ({ destinationId: s.destinationId, result: s.outcome.result })))]);
}
