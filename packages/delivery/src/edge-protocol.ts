// The wire contract between the edge agent and the service (services/api/src/edge). Every
// request is a POST with a JSON body signed with the cluster key:
//   X-Service-Timestamp: <unix s>
//   X-Service-Signature: t=<unix s>,v1=<hex HMAC-SHA256(cluster key, "<t>.<raw body>")>
// The body carries a nonce, so no two requests have the same signature and a replayed
// request is refused. POST, not GET: the signed input is the body, so everything that
// steers the service (how many, how long to wait) must be in it.

export const edgePaths = {
  work: (clusterId: string) => `/v1/edge/clusters/${clusterId}/work`,
  reports: (clusterId: string) => `/v1/edge/clusters/${clusterId}/reports`,
  /** Leases given back unsent (the agent stops): the deliveries are free at once. */
  releases: (clusterId: string) => `/v1/edge/clusters/${clusterId}/releases`,
};

/** Reports per request at most (each carries a response body of up to RESPONSE_BODY_LIMIT). */
export const MAX_REPORTS_PER_REQUEST = 100;

/** Releases per request at most (an agent holding more sends several). */
export const MAX_RELEASES_PER_REQUEST = 1000;

interface Signed {
  /** Names the agent process; leases are `<agent_id>:<random>`. */
  agent_id: string;
  agent_version: string;
  nonce: string;
}

/** Long-poll for up to `max` deliveries, waiting up to `wait_seconds` when none is due. */
export interface WorkRequest extends Signed {
  max: number;
  wait_seconds: number;
}

/** One leased delivery: everything to send it, signed service-side (no secret on the agent). */
export interface WorkItem {
  id: string;
  /** Echoed in the report: a report counts only while this lease holds the delivery. */
  lease_owner: string;
  url: string;
  method: string;
  /** The exact outbound headers: signatures, idempotency key, content type, custom ones. */
  headers: Record<string, string>;
  /** The exact raw bytes of the event. */
  body_base64: string;
  timeout_ms: number;
  lease_until: string;
}

export interface WorkResponse {
  deliveries: WorkItem[];
  /** Response bytes an attempt keeps; the agent reads no more. */
  response_body_limit: number;
}

/** One attempt as the agent saw it; recorded like a direct attempt. */
export interface AttemptReport {
  delivery_id: string;
  lease_owner: string;
  status_code: number | null;
  response_body: string | null;
  response_headers: Record<string, string> | null;
  error_kind: string | null;
  error: string | null;
  started_at: string;
  duration_ms: number;
}

export interface ReportRequest extends Signed {
  reports: AttemptReport[];
}

/** `ignored`: the lease no longer holds the delivery (reported already, or re-leased). */
export type ReportResult =
  | { delivery_id: string; result: 'recorded'; attempt: number; status: 'delivered' | 'failed' | 'exhausted' }
  | { delivery_id: string; result: 'ignored'; reason: 'not_leased' };

export interface ReportResponse {
  results: ReportResult[];
}

/**
 * A lease given back without an attempt: the delivery was leased to the agent but not sent,
 * or its send was abandoned before any answer (the agent stops). `id` and `lease_owner` are
 * the WorkItem's.
 */
export interface LeaseRelease {
  delivery_id: string;
  lease_owner: string;
}

export interface ReleaseRequest extends Signed {
  releases: LeaseRelease[];
}

/**
 * Per item, in the request's order. `released`: the lease was dropped and the delivery is
 * free to lease at once (no attempt recorded, its attempt count unchanged). `ignored`: that
 * lease no longer holds the delivery (reported, expired and re-leased, released already, or
 * not a delivery of this cluster); nothing changed.
 */
export type ReleaseResult = { delivery_id: string; result: 'released' } | { delivery_id: string; result: 'ignored'; reason: 'not_leased' };

export interface ReleaseResponse {
  results: ReleaseResult[];
}
