// Delivery attempts inserted straight into a test schema, for the evidence tests.
import { newId, type Pool } from '@hookline/db';
import { seedTenant } from '@hookline/testing';
import { insertDestination, insertEvent, insertFlow, insertIngester } from './router-fixtures';

export interface AttemptMaker {
  tenantId: string;
  /** One delivery with one attempt (200, started now on the database's clock); its id. */
  attempt(): Promise<string>;
}

export async function attemptMaker(pool: Pool): Promise<AttemptMaker> {
  const t = await seedTenant(pool);
  const ing = await insertIngester(pool, t.tenantId);
  const dst = await insertDestination(pool, t.tenantId);
  const flw = await insertFlow(pool, { tenantId: t.tenantId, ingesterId: ing, destinationId: dst });
  return {
    tenantId: t.tenantId,
    async attempt() {
      const ev = await insertEvent(pool, { tenantId: t.tenantId, ingesterId: ing, status: 'filtered' });
      const dlv = newId('dlv');
      await pool.query(`INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id) VALUES ($1, $2, $3, $4, $5)`, [dlv, t.tenantId, ev, flw, dst]);
      const id = newId('att');
      await pool.query(
        `INSERT INTO delivery_attempts (id, tenant_id, delivery_id, number, status_code, response_body, started_at, duration_ms) VALUES ($1, $2, $3, 1, 200, 'ok', now(), 12)`,
        [id, t.tenantId, dlv],
      );
      return id;
    },
  };
}
