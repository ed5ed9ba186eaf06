import type { Logger } from '@hookline/logger';
import { createOtlpExporter, type Attributes, type SpanExporter, type SpanKind } from './otlp-exporter';
import { childContext, formatTraceparent, parseTraceparent, type TraceContext } from './trace-context';

export interface Span {
  readonly context: TraceContext;
  /** The `traceparent` that makes this span the parent of the next hop. */
  readonly traceparent: string;
  /** Ends the span once; `error` marks it failed, `name` renames it (a route known only at the end). */
  end(attributes?: Attributes, error?: string, name?: string): void;
}

export interface Tracer {
  /** Whether spans leave the process (OTEL_EXPORTER_OTLP_ENDPOINT is set). */
  readonly exporting: boolean;
  /** A new span, child of `parent` (a traceparent header or a context), else the root of a new trace. */
  start(name: string, kind: SpanKind, parent?: string | string[] | TraceContext | null, attributes?: Attributes): Span;
  /** Records a span that already happened, whose context was already sent (an outbound request's traceparent). */
  record(name: string, kind: SpanKind, context: TraceContext, timing: { startMs: number; endMs: number; parentSpanId?: string }, attributes: Attributes, error?: string): void;
  close(): Promise<void>;
}

export interface TracerOptions {
  service: string;
  logger: Logger;
  /** OTLP/HTTP endpoint; empty: nothing is exported, but trace contexts still propagate. */
  endpoint: string;
  /** Share of traces exported, decided from the trace id so every service agrees. */
  sampleRatio?: number;
  exporter?: SpanExporter;
}

/** Deterministic per trace: the last 14 hex digits of the trace id as a fraction. */
export function sampledByRatio(traceId: string, ratio: number): boolean {
  if (ratio >= 1) return true;
  if (ratio <= 0) return false;
  return parseInt(traceId.slice(18), 16) / 0x100000000000000 < ratio;
}

/**
 * Spans for W3C trace propagation and optional OTLP export. Without an endpoint a span is
 * only its context (two random ids), so the hot path pays next to nothing.
 */
export function createTracer(o: TracerOptions): Tracer {
  const exporter = o.exporter ?? (o.endpoint ? createOtlpExporter({ endpoint: o.endpoint, service: o.service, logger: o.logger }) : null);
  const ratio = o.sampleRatio ?? 1;
  const noop = (): void => undefined;

  return {
    exporting: exporter !== null,
    start(name, kind, parent, attributes = {}) {
      const p = typeof parent === 'string' || Array.isArray(parent) ? parseTraceparent(parent) : (parent ?? null);
      const context = childContext(p);
      const traceparent = formatTraceparent(context);
      if (!exporter || !sampledByRatio(context.traceId, ratio)) return { context, traceparent, end: noop };
      const startMs = Date.now();
      let ended = false;
      return {
        context,
        traceparent,
        end(more, error, finalName) {
          if (ended) return;
          ended = true;
          exporter.export({ traceId: context.traceId, spanId: context.spanId, parentSpanId: p?.spanId, name: finalName ?? name, kind, startMs, endMs: Date.now(), attributes: { ...attributes, ...more }, error });
        },
      };
    },
    record(name, kind, context, timing, attributes, error) {
      if (!exporter || !sampledByRatio(context.traceId, ratio)) return;
      exporter.export({ traceId: context.traceId, spanId: context.spanId, parentSpanId: timing.parentSpanId, name, kind, startMs: timing.startMs, endMs: timing.endMs, attributes, error });
    },
    async close() {
      await exporter?.close();
    },
  };
}
