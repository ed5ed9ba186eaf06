/**
 * Why an attempt failed without (or before) a usable answer. `http_error` is a non-2xx
 * answer, `redirect` a 3xx (never followed), `payload_missing` a delivery whose retained
 * payload was purged, so nothing was sent, `edge_unavailable` a delivery of a cluster
 * destination that no edge agent took within the wait limit (nothing was sent either),
 * `signing_unavailable` a destination whose signing secret could not be opened (a wrong
 * SECRETS_KEY): nothing is sent unsigned.
 */
export const ERROR_KINDS = ['timeout', 'dns', 'connect', 'tls', 'reset', 'refused', 'ssrf_blocked', 'http_error', 'redirect', 'payload_missing', 'edge_unavailable', 'signing_unavailable'] as const;
export type ErrorKind = (typeof ERROR_KINDS)[number];

/** What one attempt produced; becomes one `delivery_attempts` row. */
export interface SendResult {
  statusCode: number | null;
  errorKind: ErrorKind | null;
  error: string | null;
  responseBody: string | null;
  responseHeaders: Record<string, string> | null;
  startedAt: Date;
  durationMs: number;
}

export function isSuccess(r: SendResult): boolean {
  return r.statusCode !== null && r.statusCode >= 200 && r.statusCode < 300;
}

/** Failures that say something about the destination (our own refusals do not). */
export function countsAgainstDestination(r: SendResult): boolean {
  return !isSuccess(r) && r.errorKind !== 'ssrf_blocked' && r.errorKind !== 'payload_missing' && r.errorKind !== 'edge_unavailable' && r.errorKind !== 'signing_unavailable';
}

const NOT_SENT_BECAUSE = {
  payload_missing: 'the retained payload was purged',
  signing_unavailable: 'a signing secret of the destination could not be opened (check SECRETS_KEY); nothing was sent',
} as const;

/** The attempt of a delivery refused before sending: nothing went out (see ERROR_KINDS). */
export function notSent(errorKind: keyof typeof NOT_SENT_BECAUSE, now = new Date()): SendResult {
  return { statusCode: null, errorKind, error: NOT_SENT_BECAUSE[errorKind], responseBody: null, responseHeaders: null, startedAt: now, durationMs: 0 };
}
