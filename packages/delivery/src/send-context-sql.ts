/**
 * What sending a delivery needs, read after a claim or lease CTE named `cte` (columns
 * id, tenant_id, event_id, destination_id, attempt_count, replay_count, …): the
 * destination, the event and the retained payload (null when purged). The deliverer's
 * claim and the edge lease share it so that both send from the same facts.
 */
export function sendContextSelect(cte: string): string {
  return `SELECT c.*, t.url, t.method, t.config, t.secrets, e.correlation_id, e.received_at, e.type, p.body, p.content_type
FROM ${cte} c
JOIN destinations t ON t.id = c.destination_id
JOIN events e ON e.id = c.event_id
LEFT JOIN event_payloads p ON p.event_id = c.event_id`;
}

/** The columns `sendContextSelect` adds to the CTE's own. */
export interface SendContextColumns {
  url: string;
  method: string;
  config: unknown;
  secrets: string[] | null;
  correlation_id: string;
  received_at: Date;
  type: string | null;
  /** null when the retained payload was purged. */
  body: Buffer | null;
  content_type: string | null;
}
