import { parseTraceparent, type Metrics, type Tracer } from '@hookline/observability';
import type { Logger } from '@hookline/logger';
import type { SendResult } from '@hookline/delivery';
import type { HttpSender, SendTarget } from './http-sender';

/**
 * The sender, observed: each outbound request becomes a client span (its context is the
 * `traceparent` the receiver got: the event's trace, from its correlation id), a debug
 * line with its ids, and on success a sample of hookline_ingest_to_delivered_seconds
 * (now − the event's receipt by ingest, which `x-hookline-ingested-at` carries).
 */
export function observeSender(sender: HttpSender, o: { metrics: Metrics; tracer: Tracer; logger: Logger }): HttpSender {
  const observe = (target: SendTarget, headers: Record<string, string>, result: SendResult): SendResult => {
    const ok = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
    if (ok) {
      const ingestedAt = Number(headers['x-hookline-ingested-at']);
      if (Number.isFinite(ingestedAt)) o.metrics.ingestToDelivered.observe(Math.max(0, Date.now() - ingestedAt) / 1000);
    }
    // Without an exporter and below debug level there is nothing to build (the common case).
    const debug = o.logger.isLevelEnabled('debug');
    if (!o.tracer.exporting && !debug) return result;
    const ids = { delivery_id: headers['x-service-delivery-idempotency-key'], event_id: headers['x-hookline-event-id'], destination_id: target.destinationId };
    const context = parseTraceparent(headers['traceparent']);
    if (context && o.tracer.exporting) {
      const startMs = result.startedAt.getTime();
      const error = ok ? undefined : (result.error ?? result.errorKind ?? `HTTP ${result.statusCode}`);
      o.tracer.record(`${target.settings.method} destination`, 'client', context, { startMs, endMs: startMs + result.durationMs }, { ...ids, 'http.response.status_code': result.statusCode ?? undefined, 'error.type': result.errorKind ?? undefined }, error);
    }
    if (debug) o.logger.debug('delivery attempt', { ...ids, trace_id: context?.traceId, status_code: result.statusCode, error_kind: result.errorKind, duration_ms: result.durationMs });
    return result;
  };
  return {
    send: async (target, headers, body) => observe(target, headers, await sender.send(target, headers, body)),
    async sendWhenClear(target, headers, body, clear) {
      const cleared = await sender.sendWhenClear(target, headers, body, clear);
      if ('sent' in cleared) observe(target, headers, cleared.sent);
      return cleared;
    },
    close: () => sender.close(),
  };
}
