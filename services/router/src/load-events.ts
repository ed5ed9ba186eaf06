import { hotStatement, type Pool } from '@hookline/db';

export interface RoutableEvent {
  id: string;
  tenant_id: string;
  ingester_id: string;
  type: string | null;
  correlation_id: string;
  provider: string;
}

/** What a filter may read besides the event's row: its stored request. */
export interface EventPayload {
  content_type: string | null;
  headers: unknown;
  query: string | null;
  body: Buffer | null;
}

// One query for the whole batch; events past `validated` were routed already and are skipped.
export const LOAD_EVENTS = `SELECT e.id, e.tenant_id, e.ingester_id, e.type, e.correlation_id, COALESCE(i.provider, 'generic') AS provider
  FROM events e
  LEFT JOIN ingesters i ON i.id = e.ingester_id
  WHERE e.id = ANY($1::text[]) AND e.status = 'validated'`;

const LOAD_PAYLOADS = `SELECT event_id, content_type, headers, query, body FROM event_payloads WHERE event_id = ANY($1::text[])`;

export async function loadValidatedEvents(pool: Pool, eventIds: readonly string[]): Promise<RoutableEvent[]> {
  if (eventIds.length === 0) return [];
  const { rows } = await pool.query<RoutableEvent>(hotStatement('router_load_events', LOAD_EVENTS, [eventIds]));
  return rows;
}

/**
 * The stored requests of the events a filter has to look at. Only those: a flow without a
 * filter (the common case) needs none, and reading every body (1 KB each, sent as hex)
 * for nothing was most of the router's read.
 */
export async function loadPayloads(pool: Pool, eventIds: readonly string[]): Promise<Map<string, EventPayload>> {
  if (eventIds.length === 0) return new Map();
  const { rows } = await pool.query<EventPayload & { event_id: string }>(LOAD_PAYLOADS, [eventIds]);
  return new Map(rows.map(({ event_id, ...p }) => [event_id, p]));
}
