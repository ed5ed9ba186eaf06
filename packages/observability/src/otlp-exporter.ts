import type { Logger } from '@hookline/logger';

export type SpanKind = 'internal' | 'server' | 'client' | 'producer' | 'consumer';
export type Attributes = Record<string, string | number | boolean | null | undefined>;

/** A finished span, as the exporter receives it. */
export interface FinishedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: SpanKind;
  startMs: number;
  endMs: number;
  attributes: Attributes;
  error?: string;
}

export interface SpanExporter {
  export(span: FinishedSpan): void;
  /** Sends what is buffered now. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

const KIND: Record<SpanKind, number> = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 };

function attrs(a: Attributes): { key: string; value: Record<string, unknown> }[] {
  const out: { key: string; value: Record<string, unknown> }[] = [];
  for (const [key, v] of Object.entries(a)) {
    if (v === undefined || v === null) continue;
    if (typeof v === 'string') out.push({ key, value: { stringValue: v } });
    else if (typeof v === 'boolean') out.push({ key, value: { boolValue: v } });
    else out.push({ key, value: Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v } });
  }
  return out;
}

const nanos = (ms: number): string => (BigInt(Math.round(ms * 1000)) * 1000n).toString();

/** The OTLP/HTTP JSON body for a batch of spans (ids are hex, as OTLP/JSON wants). */
export function otlpBody(service: string, spans: FinishedSpan[]): unknown {
  return {
    resourceSpans: [
      {
        resource: { attributes: attrs({ 'service.name': `hookline-${service}`, 'service.namespace': 'hookline' }) },
        scopeSpans: [
          {
            scope: { name: '@hookline/observability' },
            spans: spans.map((s) => ({
              traceId: s.traceId,
              spanId: s.spanId,
              ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
              name: s.name,
              kind: KIND[s.kind],
              startTimeUnixNano: nanos(s.startMs),
              endTimeUnixNano: nanos(s.endMs),
              attributes: attrs(s.attributes),
              status: s.error ? { code: 2, message: s.error.slice(0, 300) } : { code: 1 },
            })),
          },
        ],
      },
    ],
  };
}

export interface OtlpOptions {
  /** OTEL_EXPORTER_OTLP_ENDPOINT, e.g. http://otel-collector:4318; spans go to `<endpoint>/v1/traces`. */
  endpoint: string;
  service: string;
  logger: Logger;
  intervalMs?: number;
  maxBatch?: number;
  /** Spans buffered at most; beyond it new spans are dropped (the hot path never waits). */
  maxQueue?: number;
  /** How long `close` may take; what is not sent by then is dropped (default 2 s). */
  closeTimeoutMs?: number;
}

/**
 * A small OTLP/HTTP (JSON) span exporter: spans are buffered and posted in batches every
 * `intervalMs`, a failed post drops its batch (tracing must never hold back webhooks).
 * `close` sends what is left within `closeTimeoutMs`, then gives up: a collector that does
 * not answer cannot hold a draining service past its deadline (each post alone may wait 10 s).
 */
export function createOtlpExporter(o: OtlpOptions): SpanExporter {
  const url = `${o.endpoint.replace(/\/+$/, '')}/v1/traces`;
  const maxBatch = o.maxBatch ?? 512;
  const maxQueue = o.maxQueue ?? 4096;
  let queue: FinishedSpan[] = [];
  let sending: Promise<void> = Promise.resolve();
  let lastWarn = 0;
  // Aborts the post in progress when `close` runs out of time.
  const closing = new AbortController();

  const post = async (spans: FinishedSpan[]): Promise<void> => {
    if (closing.signal.aborted) return;
    try {
      const signal = AbortSignal.any([AbortSignal.timeout(10_000), closing.signal]);
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(otlpBody(o.service, spans)), signal });
      await res.arrayBuffer().catch(() => undefined);
      if (!res.ok) throw new Error(`collector answered ${res.status}`);
    } catch (err) {
      if (Date.now() - lastWarn > 60_000) {
        lastWarn = Date.now();
        o.logger.warn('trace export failed; spans dropped', { spans: spans.length, error: (err as Error).message });
      }
    }
  };
  const flush = (): Promise<void> => {
    sending = sending.then(async () => {
      while (queue.length > 0) await post(queue.splice(0, maxBatch));
    });
    return sending;
  };
  const timer = setInterval(() => void flush(), o.intervalMs ?? 1000);
  timer.unref();

  return {
    export(span) {
      if (queue.length >= maxQueue) return;
      queue.push(span);
      if (queue.length === maxBatch) void flush();
    },
    flush,
    async close() {
      clearInterval(timer);
      const deadline = setTimeout(() => {
        queue = [];
        closing.abort();
      }, o.closeTimeoutMs ?? 2_000);
      try {
        await flush();
      } finally {
        clearTimeout(deadline);
        queue = [];
      }
    },
  };
}
