import { randomFillSync } from 'node:crypto';

/** A W3C trace context: the ids of a span and whether its trace is sampled. */
export interface TraceContext {
  traceId: string;
  spanId: string;
  sampled: boolean;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-|$)/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/**
 * Parses a `traceparent` header (W3C Trace Context, level 1). Returns null for anything
 * invalid: version ff, all-zero ids, upper-case hex (the spec's fields are lower-case hex,
 * and a vendor "MUST ignore" a traceparent with other characters), a version 00 value with
 * trailing data. A later version is read by its version-00 prefix, as the spec asks.
 */
export function parseTraceparent(value: string | string[] | null | undefined): TraceContext | null {
  const raw = Array.isArray(value) ? value[0] : value;
  if (!raw || raw.length < 55) return null;
  const v = raw.trim();
  const m = TRACEPARENT.exec(v);
  if (!m || m[1] === 'ff' || m[2] === ZERO_TRACE || m[3] === ZERO_SPAN) return null;
  if (m[1] === '00' && v.length !== 55) return null;
  return { traceId: m[2]!, spanId: m[3]!, sampled: (parseInt(m[4]!, 16) & 1) === 1 };
}

export function formatTraceparent(ctx: TraceContext): string {
  return `00-${ctx.traceId}-${ctx.spanId}-${ctx.sampled ? '01' : '00'}`;
}

// Ids come from a pool of random bytes refilled 4 KB at a time: one syscall per ~250 spans
// and no Buffer per id on the request path.
const pool = Buffer.alloc(4096);
let offset = pool.length;
function randomHex(bytes: number): string {
  if (offset + bytes > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  offset += bytes;
  return pool.toString('hex', offset - bytes, offset);
}

export const newTraceId = (): string => {
  const id = randomHex(16);
  return id === ZERO_TRACE ? newTraceId() : id;
};
export const newSpanId = (): string => {
  const id = randomHex(8);
  return id === ZERO_SPAN ? newSpanId() : id;
};

/** True for a valid W3C trace id (32 lowercase hex, not all zero); correlation ids are these. */
export function isTraceId(value: string): boolean {
  return value.length === 32 && value !== ZERO_TRACE && /^[0-9a-f]{32}$/.test(value);
}

/** A new span in `parent`'s trace, or the root of a new trace. */
export function childContext(parent: TraceContext | null | undefined): TraceContext {
  return parent ? { traceId: parent.traceId, spanId: newSpanId(), sampled: parent.sampled } : { traceId: newTraceId(), spanId: newSpanId(), sampled: true };
}

/** The traceparent of a new span in the trace `traceId` (e.g. an event's correlation id). */
export function traceparentIn(traceId: string): string {
  return `00-${traceId}-${newSpanId()}-01`;
}
