import type { Pool } from '@hookline/db';
import type { Breaker } from '@hookline/delivery';
import type { Metrics } from '@hookline/observability';
import { destinationHealthKey, isClusterClient, readDestinationHealthState, type BreakerState, type Redis } from '@hookline/queues';

const VALUE: Record<BreakerState, number> = { closed: 0, half_open: 1, open: 2 };

/**
 * Bounds of the boot scan: SCAN calls (each examines about SCAN_COUNT keys of the whole
 * keyspace, queue jobs included), health keys read, circuits shown.
 */
const MAX_SCAN_CALLS = 10_000;
const MAX_SCANNED_KEYS = 100_000;
const MAX_SEEDED = 10_000;
const SCAN_COUNT = 1_000;

export interface ObservedBreaker {
  breaker: Breaker;
  /**
   * Re-reads the shared state of the circuits this process shows as not closed (another
   * replica may have closed them) and drops those of destinations no longer ACTIVE. The
   * first call whose reads succeed also picks up the circuits already not closed when the
   * process started.
   */
  refresh(): Promise<void>;
}

/** A glob pattern matching `literal` exactly (Redis MATCH syntax: * ? [ ] and \ escaped). */
function globLiteral(literal: string): string {
  return literal.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

/**
 * The ids of destinations whose health hash under `prefix` says open or half-open (SCAN,
 * then the `state` fields in pipelines; bounded as above). On
 * Redis Cluster the prefix's hash tag puts the keys on one node; every master is scanned.
 */
async function scanNotClosed(redis: Redis, prefix: string): Promise<string[]> {
  const head = destinationHealthKey(prefix, '');
  const match = `${globLiteral(head)}*`;
  const nodes: Redis[] = isClusterClient(redis) ? (redis as unknown as { nodes(role: 'master'): Redis[] }).nodes('master') : [redis];
  const keys = new Set<string>();
  let calls = 0;
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, found] = await node.scan(cursor, 'MATCH', match, 'COUNT', SCAN_COUNT);
      cursor = next;
      calls++;
      for (const key of found) keys.add(key);
    } while (cursor !== '0' && keys.size < MAX_SCANNED_KEYS && calls < MAX_SCAN_CALLS);
  }
  const all = [...keys].slice(0, MAX_SCANNED_KEYS);
  const notClosed: string[] = [];
  for (let i = 0; i < all.length && notClosed.length < MAX_SEEDED; i += SCAN_COUNT) {
    const batch = all.slice(i, i + SCAN_COUNT);
    const pipeline = redis.pipeline();
    for (const key of batch) pipeline.hget(key, 'state');
    const replies = (await pipeline.exec()) ?? [];
    batch.forEach((key, j) => {
      const [err, state] = replies[j] ?? [null, null];
      if (err) throw err;
      if (state === 'open' || state === 'half_open') notClosed.push(key.slice(head.length));
    });
  }
  return notClosed.slice(0, MAX_SEEDED);
}

/** Which of `ids` are ACTIVE destinations (one query; deleted rows are simply not returned). */
async function activeOf(pool: Pool, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await pool.query<{ id: string }>(`SELECT id FROM destinations WHERE id = ANY($1::text[]) AND state = 'ACTIVE'`, [ids]);
  return new Set(rows.map((r) => r.id));
}

/**
 * Mirrors circuit states into hookline_breaker_state. Only ACTIVE destinations whose
 * circuit is not closed have a series (a closing circuit, or a destination disabled or
 * deleted while its circuit is open, removes its series), which bounds the label's
 * cardinality to the destinations failing right now.
 *
 * Disabling or deleting a destination leaves its Redis health hash `open` (only an enable
 * resets it), so each refresh reads the states of the destinations shown from PostgreSQL
 * (one query, for those ids only). A process starting while circuits are open finds them
 * by scanning the health keys at its first refresh instead of at their next probe.
 */
export function observeBreaker(breaker: Breaker, metrics: Metrics, redis: Redis, prefix: string, pool: Pool): ObservedBreaker {
  const shown = new Set<string>();
  let seeded = false;
  const drop = (destinationId: string): void => {
    if (shown.delete(destinationId)) metrics.breakerState.remove({ destination_id: destinationId });
  };
  const show = (destinationId: string, state: BreakerState): void => {
    if (state === 'closed') return drop(destinationId);
    shown.add(destinationId);
    metrics.breakerState.set({ destination_id: destinationId }, VALUE[state]);
  };
  return {
    breaker: {
      ...breaker,
      async record(destinationId, outcome, now) {
        const after = await breaker.record(destinationId, outcome, now);
        show(destinationId, after.state);
        return after;
      },
    },
    async refresh() {
      // A failed read (the scan, or PostgreSQL) does not stop the others: the circuits shown
      // are still re-read from Redis (without PostgreSQL none is dropped by its destination's
      // state and none found by the scan is added), then the first failure is reported.
      let failure: unknown = null;
      const ids = new Set(shown);
      if (!seeded) {
        try {
          for (const id of await scanNotClosed(redis, prefix)) ids.add(id);
        } catch (err) {
          failure = err;
        }
      }
      const list = [...ids];
      let active: Set<string> | null = null;
      try {
        active = await activeOf(pool, list);
      } catch (err) {
        failure ??= err;
      }
      const targets = active ? list : [...shown];
      const states = await Promise.all(targets.map((id) => (active && !active.has(id) ? null : readDestinationHealthState(redis, prefix, id).then((h) => h.state))));
      targets.forEach((id, i) => {
        const state = states[i];
        if (state) show(id, state);
        else drop(id);
      });
      if (failure) throw failure;
      seeded = true;
    },
  };
}
