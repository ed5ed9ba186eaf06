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
}

const MAX_ENTRIES = 50_000;

const LOAD = `SELECT i.id, i.tenant_id, i.provider, i.config, i.secrets, i.state::text AS state, t.plan::text AS plan
  FROM ingesters i JOIN tenants t ON t.id = i.tenant_id WHERE i.id = $1`;

/**
 * Ingesters in memory for `ttlMs` (misses too, so unknown ids cost no query each),
 * dropped at once when a change is announced. Concurrent misses share one query.
 */
export function createIngesterCache(pool: Pool, box: SecretBox, ttlMs: number, defaultTolerance: number, dbTimeoutMs?: number): IngesterCache {
  const entries = new Map<string, { value: IngesterSettings | null; expires: number }>();
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
      // Unknown ids are cached too; a flood of random ones must not grow memory forever.
      if (entries.size >= MAX_ENTRIES) entries.clear();
      entries.set(id, { value, expires: Date.now() + ttlMs });
    }
    return value;
  }

  return {
    get(id) {
      const hit = entries.get(id);
      if (hit && hit.expires > Date.now()) return Promise.resolve(hit.value);
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
      if (change.kind === 'ingester') entries.delete(change.id);
      else if (change.kind === 'tenant') {
        for (const [id, e] of entries) if (e.value?.tenantId === change.id || e.value?.tenantId === change.tenantId) entries.delete(id);
      }
    },
    clear() {
      generation++;
      loading.clear();
      entries.clear();
    },
  };
}
