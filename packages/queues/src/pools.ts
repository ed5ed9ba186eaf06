import { deliverQueueName, POOL_NAME } from './catalog';

const POOL = POOL_NAME.source.slice(1, -1);
const TENANT = '[A-Za-z0-9_-]{1,100}';

/** ajv patterns for the pool variables, so a bad value stops the boot (and fails the manifest tests). */
export const POOL_PATTERNS = {
  /** DEDICATED_POOLS: `tenant_id=pool,…`, or empty. */
  dedicatedPools: `^$|^${TENANT}=${POOL}(,${TENANT}=${POOL})*$`,
  /** DELIVER_QUEUES: `deliver` and/or `deliver.<pool>`, comma-separated. */
  deliverQueues: `^deliver(\\.${POOL})?(,deliver(\\.${POOL})?)*$`,
} as const;

/** `ten_a=acme,ten_b=acme` → tenant id → pool. Tenants not listed belong to the default pool. */
export function parseDedicatedPools(value: string): ReadonlyMap<string, string> {
  const out = new Map<string, string>();
  for (const part of value.split(',').map((s) => s.trim()).filter(Boolean)) {
    const [tenant, pool, extra] = part.split('=').map((s) => s.trim());
    if (!tenant || !pool || extra !== undefined || !POOL_NAME.test(pool)) throw new Error(`DEDICATED_POOLS entry "${part}" is not tenant_id=pool (pool: ${POOL_NAME.source})`);
    if (out.has(tenant)) throw new Error(`DEDICATED_POOLS names tenant ${tenant} twice`);
    out.set(tenant, pool);
  }
  return out;
}

/** The `deliver` queue a tenant's deliveries go to. */
export function deliverQueueOf(pools: ReadonlyMap<string, string>, tenantId: string): string {
  return deliverQueueName(pools.get(tenantId));
}

/** `deliver,deliver.acme` → [{ queue: 'deliver', pool: null }, { queue: 'deliver.acme', pool: 'acme' }]. */
export function parseDeliverQueues(value: string): { queue: string; pool: string | null }[] {
  const names = [...new Set(value.split(',').map((s) => s.trim()).filter(Boolean))];
  if (names.length === 0) throw new Error('DELIVER_QUEUES names no queue');
  return names.map((queue) => {
    const m = /^deliver(?:\.(.+))?$/.exec(queue);
    const pool = m?.[1] ?? null;
    if (!m || (pool !== null && !POOL_NAME.test(pool))) throw new Error(`DELIVER_QUEUES entry "${queue}" is not deliver or deliver.<pool>`);
    return { queue, pool };
  });
}
