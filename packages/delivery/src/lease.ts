// A delivery is held (claimed by a deliverer, or leased to an edge agent) while its lease
// runs: `lease_owner` names the holder and `lease_until` the end. A claim writes only
// those two columns (and `updated_at`): the status stays pending, failed or replaying, so
// the claim changes no indexed column and PostgreSQL updates the row in place (a HOT
// update: no new index entries; `deliveries` has fillfactor 50 to leave room on each page).
// Setting status `delivering` made every claim a new row version in all nine indexes.
// The API shows a held delivery as `delivering` (shownStatusSql / shownStatus).

import { randomIdString } from '@hookline/signing';

/** Statuses a claim or a lease can take a delivery from; they are kept while it is held. */
export const CLAIMABLE_STATUSES = ['pending', 'failed', 'replaying'] as const;

/**
 * A new `lease_owner` for one claim or lease statement: `<holder>:<random>`, so that a
 * holder can find what it leased by prefix (the deliverer's release at drain) while each
 * statement's rows stay apart.
 */
export const newLeaseOwner = (holder: string): string => `${holder}:${randomIdString(6, 'hex')}`;

/** SQL list of CLAIMABLE_STATUSES, for `status IN (…)`. */
export const CLAIMABLE_SQL = CLAIMABLE_STATUSES.map((s) => `'${s}'`).join(', ');

/** SQL: the row `alias` is held by a live lease. */
export const heldSql = (alias: string): string => `(${alias}.status IN (${CLAIMABLE_SQL}) AND ${alias}.lease_until > now())`;

/**
 * SQL `SET` list that gives a lease back without an attempt (nothing was sent): the holder
 * columns cleared, as a claim wrote them, and nothing else. Status, attempt_count and
 * next_attempt_at stay: a leased row was due (next_attempt_at <= now()), so it is free and
 * due again at once (freeSql), keeps its place in line (leases take the oldest due first),
 * and the update stays in place (HOT) like the claim. The statement using it must guard
 * with `lease_owner = <the holder's owner>` so that only that holder's lease is dropped.
 * (The deliverer's own releases also set next_attempt_at = now(): its jobs and recovery
 * sweep key on it.)
 */
export const RELEASE_SET_SQL = 'lease_owner = NULL, lease_until = NULL, updated_at = now()';

/** SQL: the row `alias` is free to claim or lease (no lease, or an expired one). */
export const freeSql = (alias: string): string => `(${alias}.lease_until IS NULL OR ${alias}.lease_until <= now())`;

/**
 * SQL: the delivery `alias` may be sent as far as its flow is concerned: a DISABLED or
 * DELETED flow stops its deliveries (SPEC.md lifecycle) until it is ACTIVE again. A flow
 * row that does not exist holds nothing back.
 */
export const flowActiveSql = (alias: string): string =>
  `NOT EXISTS (SELECT 1 FROM delivery_flows f WHERE f.id = ${alias}.flow_id AND f.state <> 'ACTIVE')`;

/** SQL: the status the API shows for `alias` (`delivering` while held), as text. */
export const shownStatusSql = (alias: string): string => `(CASE WHEN ${heldSql(alias)} THEN 'delivering' ELSE ${alias}.status::text END)`;

/** The status the API shows: `delivering` while a live lease holds a claimable delivery. */
export function shownStatus(status: string, leaseUntil: Date | null, now: Date = new Date()): string {
  return leaseUntil !== null && leaseUntil > now && (CLAIMABLE_STATUSES as readonly string[]).includes(status) ? 'delivering' : status;
}

// `deliveries.held` (another thing than heldSql above: an open delivery of a DISABLED
// destination, left out of the recovery sweep's index) follows destinations.state through
// a trigger (migration 20261124000000_held_deliveries), whoever changes the state: the
// api, the automatic disable, an older replica or manual SQL. The router and retry store
// it on the deliveries they create or reopen.
