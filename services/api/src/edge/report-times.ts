import { AppError, type FieldError } from '@hookline/errors';
import { MAX_DESTINATION_TIMEOUT_MS, type AttemptReport } from '@hookline/delivery';
import { parseTimestamp } from '../http/pagination';
import type { EdgeDeps } from './edge-deps';
import { leaseMsFor } from './lease-work';

/** The instants (ms epoch) a report's `started_at` may name, for a request received at `nowMs`. */
interface StartedAtWindow {
  earliest: number;
  latest: number;
}

/**
 * The `started_at` an agent can honestly report, on the api's clock: the agent stamps it on
 * the service's time (ServiceClient.now, learnt from the api's `Date`, which also signs its
 * requests), so the api's clock, read when the request arrives, is the one to hold it to.
 *
 * - Latest: now + EDGE_SIGNATURE_TOLERANCE_SECONDS. An attempt cannot start after its report
 *   arrives; the tolerance is the clock error the api already accepts from an agent.
 * - Earliest: now − (longest lease + tolerance + EDGE_LEASE_MS). An attempt starts after its
 *   lease was granted, and a report counts only while that lease holds the delivery; the
 *   longest lease is leaseMsFor(EDGE_LEASE_MS, the largest timeout a delivery can have: a
 *   destination's MAX_DESTINATION_TIMEOUT_MS or DELIVERY_TIMEOUT_MS, whichever is larger).
 *   One more EDGE_LEASE_MS leaves room for a report retried after a short outage and for the
 *   difference between the api's clock and the database's (which times the leases).
 *
 * Defaults (60 s lease, 300 s tolerance, 5 min timeout cap): from 11.5 minutes before the
 * api's clock to 5 minutes after it.
 */
export function startedAtWindow(deps: Pick<EdgeDeps, 'config' | 'policy'>, nowMs: number): StartedAtWindow {
  const { EDGE_LEASE_MS, EDGE_SIGNATURE_TOLERANCE_SECONDS } = deps.config;
  const toleranceMs = EDGE_SIGNATURE_TOLERANCE_SECONDS * 1000;
  const longestLease = leaseMsFor(EDGE_LEASE_MS, Math.max(MAX_DESTINATION_TIMEOUT_MS, deps.policy.defaults.timeoutMs));
  return { earliest: nowMs - (longestLease + toleranceMs + EDGE_LEASE_MS), latest: nowMs + toleranceMs };
}

/**
 * Refuses (400, one field error per bad report, `reports.<i>.started_at`, as the schema's
 * errors name it) a request with a report whose `started_at` is not a real instant (a leap
 * second, an offset without minutes: the date-time format lets them through, Date cannot read
 * them) or lies outside startedAtWindow. Checked before anything is written, so nothing of the
 * request is recorded; the agent splits a refused batch until the bad report is alone, and the
 * others are recorded then. A time far off would be stored as given and end up in the
 * attempt's evidence receipt, which cannot state a year past 9999.
 */
export function assertReportTimes(deps: Pick<EdgeDeps, 'config' | 'policy'>, reports: readonly AttemptReport[], nowMs = Date.now()): void {
  const window = startedAtWindow(deps, nowMs);
  const errors: FieldError[] = [];
  reports.forEach((r, i) => {
    const at = parseTimestamp(r.started_at);
    const field = `reports.${i}.started_at`;
    if (!at) errors.push({ field, message: 'must be an RFC 3339 date-time with seconds 00-59 and an offset ±hh:mm or Z' });
    else if (at.getTime() < window.earliest || at.getTime() > window.latest) {
      errors.push({ field, message: `must be between ${new Date(window.earliest).toISOString()} and ${new Date(window.latest).toISOString()} (the service's clock when the request arrived)` });
    }
  });
  if (errors.length) throw AppError.validation(errors);
}
