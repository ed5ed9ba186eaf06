import type { Pool } from '@hookline/db';

export interface RoutableEvent {
  id: string;
  tenant_id: string;
  ingester_id: string;
  type: string | null;
  correlation_id: string;
  provider: string;
  content_type: string | null;
  headers: unknown;
  query: string | null;
  body: Buffer | null;
}

// One query for the whole batch; events past `validated` were routed already and are skipped.
const LOAD_EVENTS = `SELECT e.id, e.tenant_id, e.ingester_id, e.type, e.correlation_id,
    COALESCE(i.provider, 'generic') AS provider, p.content_type, p.headers, p.query, p.body
  FROM events e
  LEFT JOIN event_payloads p ON p.event_id = e.id
  LEFT JOIN ingesters i ON i.id = e.ingester_id
  WHERE e.id = ANY($1::text[]) AND e.status = 'validated'`;

export async function loadValidatedEvents(pool: Pool, eventIds: readonly string[]): Promise<RoutableEvent[]> {
  if (eventIds.length === 0) return [];
  const { rows } = await pool.query<RoutableEvent>(LOAD_EVENTS, [eventIds]);
  return rows;
}
