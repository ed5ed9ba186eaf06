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
// Each event is looked up by its primary key, one id at a time (LATERAL; LIMIT 1 keeps the
// status test out of the lookup): with `id = ANY($1) AND status = 'validated'` the cached
// generic plan walked the partial index of every validated event, the whole backlog, for
// each route job (as ROUTE's lookup, route-events.ts).
export const LOAD_EVENTS = `SELECT e.id, e.tenant_id, e.ingester_id, e.type, e.correlation_id, COALESCE(i.provider, 'generic') AS provider
  FROM (SELECT DISTINCT unnest($1::text[]) AS id) x
  CROSS JOIN LATERAL (SELECT e.id, e.tenant_id, e.ingester_id, e.type, e.correlation_id, e.status FROM events e WHERE e.id = x.id LIMIT 1) e
  LEFT JOIN ingesters i ON i.id = e.ingester_id
  WHERE e.status = 'validated'`;

/** Bytes of stored requests read per query at most (one bigger than that is read alone). */
export const PAYLOAD_CHUNK_BYTES = 16 * 1024 * 1024;

// The next chunk of stored requests, in event id order (bytewise, as JavaScript compares
// the ids): as many as fit in $2 bytes (the body's, query's and headers' stored sizes, which
// PostgreSQL knows without reading them), and at least one. Only the rows returned are read
// in full.
export const LOAD_PAYLOAD_CHUNK = `WITH sized AS (
    SELECT p.event_id,
      sum(octet_length(p.body) + COALESCE(octet_length(p.query), 0) + pg_column_size(p.headers)) OVER w AS upto,
      row_number() OVER w AS n
    FROM event_payloads p WHERE p.event_id = ANY($1::text[])
    WINDOW w AS (ORDER BY p.event_id COLLATE "C")
  )
  SELECT p.event_id, p.content_type, p.headers, p.query, p.body
  FROM sized s JOIN event_payloads p ON p.event_id = s.event_id
  WHERE s.upto <= $2 OR s.n = 1
  ORDER BY p.event_id COLLATE "C"`;

export async function loadValidatedEvents(pool: Pool, eventIds: readonly string[]): Promise<RoutableEvent[]> {
  if (eventIds.length === 0) return [];
  const { rows } = await pool.query<RoutableEvent>(hotStatement('router_load_events', LOAD_EVENTS, [eventIds]));
  return rows;
}

/**
 * The stored requests of the events a filter has to look at, in chunks of at most
 * `chunkBytes` (one request bigger than that is a chunk of its own), in event id order.
 * Only those events: a flow without a filter (the common case), or whose filter reads only
 * the event's type, needs none. A chunk is read when the previous one was consumed, so the
 * caller holds one chunk at a time (a backlog of large bodies read at once ran the router
 * out of memory). Events without a stored request are in no chunk.
 */
export async function* loadPayloadChunks(pool: Pool, eventIds: readonly string[], chunkBytes = PAYLOAD_CHUNK_BYTES): AsyncGenerator<Map<string, EventPayload>> {
  let rest = [...new Set(eventIds)].sort();
  while (rest.length > 0) {
    const { rows } = await pool.query<EventPayload & { event_id: string }>(LOAD_PAYLOAD_CHUNK, [rest, chunkBytes]);
    if (rows.length === 0) return;
    const last = rows[rows.length - 1]!.event_id;
    rest = rest.filter((id) => id > last);
    yield new Map(rows.map(({ event_id, ...p }) => [event_id, p]));
  }
}
