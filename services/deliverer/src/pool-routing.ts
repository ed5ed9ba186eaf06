import type { Pool } from '@hookline/db';
import type { Producer } from '@hookline/queues';

/**
 * A producer whose `deliver` jobs go to one pool's queue. A job's retries and deferrals
 * stay in the pool that took it (its deliveries are that pool's tenants').
 */
export function poolProducer(producer: Producer, pool: string | null): Producer {
  if (pool === null) return producer;
  return {
    ...producer,
    add(name, data, opts = {}) {
      return producer.add(name, data, { pool, ...opts });
    },
  };
}

/**
 * A producer for the recovery sweep, which finds stranded deliveries of every tenant: it
 * splits each `deliver` job by the tenants' pools (DEDICATED_POOLS), one query per job.
 */
export function tenantPoolProducer(producer: Producer, db: Pool, pools: ReadonlyMap<string, string>): Producer {
  if (pools.size === 0) return producer;
  return {
    ...producer,
    async add(name, data, opts = {}) {
      if (name !== 'deliver' || !('deliveryIds' in data)) return producer.add(name, data, opts);
      const { rows } = await db.query<{ id: string; tenant_id: string }>('SELECT id, tenant_id FROM deliveries WHERE id = ANY($1::text[])', [data.deliveryIds]);
      const byPool = new Map<string | null, string[]>();
      for (const r of rows) {
        const pool = pools.get(r.tenant_id) ?? null;
        byPool.set(pool, [...(byPool.get(pool) ?? []), r.id]);
      }
      for (const [pool, deliveryIds] of byPool) await producer.add('deliver', { ...data, deliveryIds }, { ...opts, pool });
    },
  };
}
