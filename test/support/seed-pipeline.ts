// A tenant with one ingester → flow → destination, written straight to PostgreSQL (no api
// process needed), and a steady load generator for the drain tests.
import { newId, type Pool } from '@hookline/db';
import { seedTenant } from '@hookline/testing';

export interface SeededPipeline {
  tenantId: string;
  ingesterId: string;
  destinationId: string;
  flowId: string;
}

export async function seedPipeline(pool: Pool, destinationUrl: string, tenantId?: string): Promise<SeededPipeline> {
  const tenant = tenantId ?? (await seedTenant(pool, { plan: 'pro' })).tenantId;
  const ingesterId = newId('ing');
  const destinationId = newId('dst');
  const flowId = newId('flw');
  await pool.query(`INSERT INTO ingesters (id, tenant_id, name, provider, updated_at) VALUES ($1, $2, 'in', 'generic', now())`, [ingesterId, tenant]);
  await pool.query(`INSERT INTO destinations (id, tenant_id, name, url, updated_at) VALUES ($1, $2, 'out', $3, now())`, [destinationId, tenant, destinationUrl]);
  await pool.query(`INSERT INTO delivery_flows (id, tenant_id, name, ingester_id, destination_id, filter, updated_at) VALUES ($1, $2, 'flow', $3, $4, '{}', now())`, [flowId, tenant, ingesterId, destinationId]);
  return { tenantId: tenant, ingesterId, destinationId, flowId };
}

export interface Load {
  /** Event ids the ingest answered 2xx for: each must be delivered. */
  acknowledged: string[];
  /** Requests that got no 2xx (refused connection, 503 while draining…): the sender would retry. */
  refused: number;
  stop(): Promise<void>;
}

/**
 * `concurrency` senders posting one event after another to `hookUrl` until stopped, each
 * with a short pause, so a steady stream flows while services are stopped and restarted.
 */
export function startLoad(hookUrl: string, concurrency = 4, pauseMs = 20): Load {
  const load: Load = { acknowledged: [], refused: 0, stop: async () => undefined };
  let running = true;
  let n = 0;
  const sender = async (): Promise<void> => {
    while (running) {
      try {
        const res = await fetch(hookUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: n++ }), signal: AbortSignal.timeout(10_000) });
        const body = (await res.json().catch(() => ({}))) as { event_id?: string };
        if (res.status < 300 && body.event_id) load.acknowledged.push(body.event_id);
        else load.refused++;
      } catch {
        load.refused++;
      }
      await new Promise((r) => setTimeout(r, pauseMs));
    }
  };
  const senders = Array.from({ length: concurrency }, sender);
  load.stop = async () => {
    running = false;
    await Promise.all(senders);
  };
  return load;
}
