import { newId } from '@hookline/db';
import { hashPassword } from '@hookline/signing';
import type { ApiHarness } from './api-harness';

export interface Pipeline {
  ingesterId: string;
  destinationId: string;
  flowId: string;
}

/** An ingester → destination flow created through the API. */
export async function createPipeline(h: ApiHarness, tenantId: string, key: string, label = 'p'): Promise<Pipeline> {
  const ing = await h.call('POST', `/v1/tenants/${tenantId}/ingesters`, { key, body: { name: `${label}-in`, provider: 'generic' } });
  const dst = await h.call('POST', `/v1/tenants/${tenantId}/destinations`, { key, body: { name: `${label}-out`, url: 'http://127.0.0.1:1/hook' } });
  const flow = await h.call('POST', `/v1/tenants/${tenantId}/delivery-flows`, { key, body: { name: `${label}-flow`, endpoint: ing.body.id, target: dst.body.id } });
  if (flow.status !== 201) throw new Error(`pipeline setup failed: ${JSON.stringify(flow.body)}`);
  return { ingesterId: ing.body.id, destinationId: dst.body.id, flowId: flow.body.id };
}

/** An event (with its payload unless told otherwise) as ingest would have stored it. */
export async function insertEvent(h: ApiHarness, tenantId: string, ingesterId: string, opts: { status?: string; payload?: boolean; at?: Date } = {}): Promise<string> {
  const at = opts.at ?? new Date();
  const id = newId('evt', at.getTime());
  await h.db.pool.query(
    `INSERT INTO events (id, tenant_id, ingester_id, type, status, correlation_id, received_at, validated_at, filtered_at)
     VALUES ($1, $2, $3, 'order.created', $4, $5, $6, $6, $6)`,
    [id, tenantId, ingesterId, opts.status ?? 'filtered', `cor_${id}`, at],
  );
  if (opts.payload !== false) {
    await h.db.pool.query(`INSERT INTO event_payloads (event_id, tenant_id, content_type, body) VALUES ($1, $2, 'application/json', $3)`, [id, tenantId, Buffer.from('{"a":1}')]);
  }
  return id;
}

export async function insertDelivery(h: ApiHarness, tenantId: string, eventId: string, p: Pipeline, opts: { status?: string; at?: Date; attempts?: number } = {}): Promise<string> {
  const at = opts.at ?? new Date();
  const id = newId('dlv', at.getTime());
  const attempts = opts.attempts ?? 0;
  await h.db.pool.query(
    `INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, attempt_count, created_at, next_attempt_at, exhausted_at)
     VALUES ($1, $2, $3, $4, $5, $6::"DeliveryStatus", $7, $8::timestamptz, $8::timestamptz, CASE WHEN $6::"DeliveryStatus" = 'exhausted' THEN $8::timestamptz END)`,
    [id, tenantId, eventId, p.flowId, p.destinationId, opts.status ?? 'pending', attempts, at],
  );
  for (let n = 1; n <= attempts; n++) {
    await h.db.pool.query(
      `INSERT INTO delivery_attempts (id, tenant_id, delivery_id, number, status_code, response_body, started_at, duration_ms)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [newId('att', at.getTime() + n), tenantId, id, n, n === attempts && opts.status === 'delivered' ? 200 : 500, n === attempts ? 'ok' : 'boom', new Date(at.getTime() + n), 10 * n],
    );
  }
  return id;
}

/** A dashboard user who can POST /auth/login. */
export async function insertUser(h: ApiHarness, tenantId: string, email: string, password: string): Promise<string> {
  const id = newId('usr');
  await h.db.pool.query('INSERT INTO users (id, tenant_id, email, password_hash) VALUES ($1, $2, $3, $4)', [id, tenantId, email, await hashPassword(password)]);
  return id;
}

/** Moves a pipeline's destination or flow through the API: disable, then for DELETED also delete; each answers 200. */
export async function setOwnerState(h: ApiHarness, t: { tenantId: string; apiKey: string }, kind: 'destinations' | 'delivery-flows', id: string, to: 'DISABLED' | 'DELETED'): Promise<void> {
  const base = `/v1/tenants/${t.tenantId}/${kind}/${id}`;
  expect((await h.call('POST', `${base}/disable`, { key: t.apiKey })).status).toBe(200);
  if (to === 'DELETED') expect((await h.call('DELETE', base, { key: t.apiKey })).status).toBe(200);
}
