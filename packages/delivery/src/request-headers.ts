import { createHash } from 'node:crypto';
import { signServiceRequest, signStandardWebhook, whsecKey, randomIdString } from '@hookline/signing';

export interface OutboundMessage {
  deliveryId: string;
  eventId: string;
  eventType: string | null;
  correlationId: string;
  receivedAt: Date;
  body: Buffer;
  contentType: string | null;
  /** Plain `whsec_…` secrets, newest first; all are signed with (rotation). */
  secrets: string[];
  customHeaders: Record<string, string>;
  traceparent?: string;
}

/** Header values must be visible ASCII; anything else is percent-encoded. */
function headerValue(v: string): string {
  return /^[\x20-\x7e]*$/.test(v) ? v : encodeURIComponent(v);
}

const TRACEPARENT = /^00-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** A child span of the job's trace, else of a trace derived from the event's correlation id. */
export function childTraceparent(correlationId: string, parent?: string): string {
  const m = parent ? TRACEPARENT.exec(parent) : null;
  let traceId = m?.[1];
  if (!traceId) traceId = /^[0-9a-f]{32}$/.test(correlationId) ? correlationId : createHash('sha256').update(correlationId).digest('hex').slice(0, 32);
  return `00-${traceId}-${randomIdString(8, 'hex')}-01`;
}

/**
 * The signature headers of one attempt, stamped `nowSeconds`, each with one signature per
 * active secret (during a rotation a consumer holding either secret verifies): Standard
 * Webhooks (`webhook-id` = the delivery id, `webhook-timestamp`, one `v1,` per secret,
 * newest first) and `X-Service-Timestamp` / `X-Service-Signature` (`t=…,v1=…[,v1=…]`,
 * newest LAST: consumers who parsed the header into a map keep the last `v1=`, which
 * before rotations signed with both was the only one, so it must stay the newest secret's).
 * None without a secret.
 */
export function signatureHeaders(secrets: string[], deliveryId: string, body: Buffer, nowSeconds = Math.floor(Date.now() / 1000)): Record<string, string> {
  if (secrets.length === 0) return {};
  return { ...signStandardWebhook(secrets, deliveryId, nowSeconds, body), ...signServiceRequest([...secrets].reverse().map(whsecKey), body, nowSeconds) };
}

/**
 * The headers of one attempt. Custom headers come first so that nothing configured can
 * replace a signature or the idempotency key. The idempotency key and `webhook-id` are
 * the delivery id: stable across retries and replays of that delivery. A sender that may
 * wait before sending passes no secrets here and adds `signatureHeaders` when the request
 * leaves, so that the signed timestamp is the sending time.
 */
export function buildHeaders(m: OutboundMessage, nowSeconds = Math.floor(Date.now() / 1000)): Record<string, string> {
  const headers: Record<string, string> = {
    ...m.customHeaders,
    'content-type': headerValue(m.contentType ?? 'application/octet-stream'),
    'user-agent': 'Hookline-Deliverer/0.1',
    'x-service-delivery-idempotency-key': m.deliveryId,
    'x-hookline-event-id': m.eventId,
    'x-hookline-ingested-at': String(m.receivedAt.getTime()),
    'x-hookline-correlation-id': headerValue(m.correlationId),
    traceparent: childTraceparent(m.correlationId, m.traceparent),
  };
  if (m.eventType) headers['x-hookline-event-type'] = headerValue(m.eventType);
  return Object.assign(headers, signatureHeaders(m.secrets, m.deliveryId, m.body, nowSeconds));
}
