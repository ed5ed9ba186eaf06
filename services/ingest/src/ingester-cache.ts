import type { Pool } from '@hookline/db';
import type { ConfigChange } from '@hookline/queues';
import type { SecretBox } from '@hookline/signing';
import { withTimeout } from './db-timeout';
import { toSettings, type IngesterRow, type IngesterSettings } from './ingester-settings';

export interface IngesterCache {
  /** The ingester (active or not), or null when it does not exist. Throws when PostgreSQL fails. */
  get(id: string): Promise<IngesterSettings | null>;
  /** Drops what a configuration change touched. */
  invalidate(change: Pick<ConfigChange, 'kind' | 'id' | 'tenantId'>): void;
  clear(): void;
  /** Entries held (expired ones included until replaced or evicted). */
  size(): { hits: number; misses: number };
}

export interface IngesterCacheBounds {
  /** Ingesters held at most (default MAX_HITS). */
  maxHits?: number;
  /** Unknown ids held at most (default MAX_MISSES). */
  maxMisses?: number;
}

/** Ingesters held at once; past it the one cached longest ago is dropped. */
export const MAX_HITS = 50_000;
/** Unknown ids held at once, apart from the ingesters: a flood of random ids drops only older unknown ids. */
export const MAX_MISSES = 50_000;

const LOAD = `SELECT i.id, i.tenant_id, i.provider, i.config, i.secrets, i.state::text AS state, t.plan::text AS plan
  FROM ingesters i JOIN tenants t ON t.id = i.tenant_id WHERE i.id = $1`;

/** Sets `key` as the newest entry of `map`, dropping the oldest one (insertion order) when it is full. */
function put<V>(map: Map<string, V>, key: string, value: V, max: number): void {
  // Re-inserted, a key moves to the end (a reload after expiry is the newest entry).
  if (!map.delete(key) && map.size >= max) {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }
  map.set(key, value);
}

/**
 * Ingesters in memory for `ttlMs` (misses too, so unknown ids cost no query each),
 * dropped at once when a change is announced. Concurrent misses share one query.
 * Ingesters (hits) and unknown ids (misses) are held apart, each bounded and evicted
 * oldest first one at a time: unknown ids, however many, never push out an ingester.
 */
export function createIngesterCache(pool: Pool, box: SecretBox, ttlMs: number, defaultTolerance: number, dbTimeoutMs?: number, bounds: IngesterCacheBounds = {}): IngesterCache {
  const maxHits = Math.max(1, bounds.maxHits ?? MAX_HITS);
  const maxMisses = Math.max(1, bounds.maxMisses ?? MAX_MISSES);
  const hits = new Map<string, { value: IngesterSettings; expires: number }>();
  /** Unknown id → when its miss expires. */
  const misses = new Map<string, number>();
  const loading = new Map<string, Promise<IngesterSettings | null>>();
  // Bumped by every invalidation, so a load that raced one does not store a stale row.
  let generation = 0;

  async function load(id: string): Promise<IngesterSettings | null> {
    const started = generation;
    const { rows } = await pool.query<IngesterRow>(withTimeout({ text: LOAD, values: [id] }, dbTimeoutMs));
    const row = rows[0];
    // A secret that cannot be opened is a deployment error (wrong SECRETS_KEY): throw,
    // never fall back to "no secrets", which would accept unsigned requests.
    const value = row ? toSettings(row, (row.secrets ?? []).map((s) => box.open(s)), defaultTolerance) : null;
    if (started === generation) {
      const expires = Date.now() + ttlMs;
      // An id is in one map at most: the other may hold what it was before (a deleted ingester, a created one).
      if (value) {
        misses.delete(id);
        put(hits, id, { value, expires }, maxHits);
      } else {
        hits.delete(id);
        put(misses, id, expires, maxMisses);
      }
    }
    return value;
  }

  return {
    get(id) {
      const hit = hits.get(id);
      if (hit && hit.expires > Date.now()) return Promise.resolve(hit.value);
      const miss = misses.get(id);
      if (miss !== undefined && miss > Date.now()) return Promise.resolve(null);
      const pending = loading.get(id);
      if (pending) return pending;
      const p: Promise<IngesterSettings | null> = load(id).finally(() => {
        if (loading.get(id) === p) loading.delete(id);
      });
      loading.set(id, p);
      return p;
    },
    invalidate(change) {
      generation++;
      loading.clear();
      if (change.kind === 'ingester') {
        // Created, changed or deleted: whichever it was cached as.
        hits.delete(change.id);
        misses.delete(change.id);
      } else if (change.kind === 'tenant') {
        for (const [id, e] of hits) if (e.value.tenantId === change.id || e.value.tenantId === change.tenantId) hits.delete(id);
      }
    },
    clear() {
      generation++;
      loading.clear();
      hits.clear();
      misses.clear();
    },
    size() {
      return { hits: hits.size, misses: misses.size };
    },
  };
}
