/** Per-destination delivery settings, read from `destinations.config` (jsonb) with defaults. */
export interface DeliveryDefaults {
  timeoutMs: number;
  maxAttempts: number;
  maxConcurrency: number;
  retryScheduleMs: number[] | null;
}

/** A client certificate (key sealed at rest) and/or a CA bundle to trust for the server. */
export interface MtlsSettings {
  cert: string | null;
  keySealed: string | null;
  ca: string | null;
}

export interface DestinationSettings {
  method: string;
  headers: Record<string, string>;
  timeoutMs: number;
  maxConcurrency: number;
  maxAttempts: number;
  /** Explicit delays (no jitter); null = exponential backoff. */
  retryScheduleMs: number[] | null;
  /** 4xx statuses that are retried; null = the default, 429 only; [] = none. */
  retryOnStatus: number[] | null;
  rateLimitPerSecond: number | null;
  mtls: MtlsSettings | null;
}

// Headers a destination may not set: hop-by-hop ones (undici refuses them) and the ones
// the deliverer owns, so that a config cannot forge a signature or the idempotency key.
const RESERVED_HEADER = /^(host|content-length|content-type|connection|keep-alive|transfer-encoding|te|trailer|upgrade|expect|proxy-.*|traceparent|tracestate|webhook-.*|x-service-.*|x-hookline-.*)$/i;

const METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** The longest `timeout_ms` a destination's config may set (a larger one falls back to the default, DELIVERY_TIMEOUT_MS). */
export const MAX_DESTINATION_TIMEOUT_MS = 300_000;

function posInt(v: unknown, max = Number.MAX_SAFE_INTEGER): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v > 0 && v <= max ? v : undefined;
}

function intList(v: unknown, min: number, max: number): number[] | undefined {
  if (!Array.isArray(v) || v.length === 0) return undefined;
  return v.every((n) => Number.isInteger(n) && n >= min && n <= max) ? (v as number[]) : undefined;
}

/** `retry_on_status`: an explicit empty list means no 4xx is retried (absent, or of the wrong shape: null, the default). */
function retriedStatuses(v: unknown): number[] | null {
  if (Array.isArray(v) && v.length === 0) return [];
  return intList(v, 400, 499) ?? null;
}

function headerMap(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!v || typeof v !== 'object' || Array.isArray(v)) return out;
  for (const [k, val] of Object.entries(v as Record<string, unknown>)) {
    if (typeof val !== 'string' || RESERVED_HEADER.test(k) || !/^[!#$%&'*+.^_`|~0-9a-z-]+$/i.test(k) || /[\r\n\0]/.test(val)) continue;
    out[k.toLowerCase()] = val;
  }
  return out;
}

function mtls(v: unknown): MtlsSettings | null {
  if (!v || typeof v !== 'object') return null;
  const m = v as Record<string, unknown>;
  const str = (k: string): string | null => (typeof m[k] === 'string' && m[k] !== '' ? (m[k] as string) : null);
  const [cert, keySealed, ca] = [str('cert'), str('key_sealed'), str('ca')];
  if (!(cert && keySealed) && !ca) return null;
  return cert && keySealed ? { cert, keySealed, ca } : { cert: null, keySealed: null, ca };
}

/**
 * Lenient on purpose: the API validates a config when it is written; here a value of the
 * wrong shape falls back to the default rather than stopping deliveries.
 */
export function destinationSettings(method: string, config: unknown, defaults: DeliveryDefaults): DestinationSettings {
  const c = config && typeof config === 'object' ? (config as Record<string, unknown>) : {};
  const m = method.toUpperCase();
  return {
    method: METHODS.has(m) ? m : 'POST',
    headers: headerMap(c['headers']),
    timeoutMs: posInt(c['timeout_ms'], MAX_DESTINATION_TIMEOUT_MS) ?? defaults.timeoutMs,
    maxConcurrency: posInt(c['max_concurrency'], 1000) ?? defaults.maxConcurrency,
    maxAttempts: posInt(c['max_attempts'], 100) ?? defaults.maxAttempts,
    retryScheduleMs: intList(c['retry_schedule_ms'], 0, 7 * 86_400_000) ?? defaults.retryScheduleMs,
    retryOnStatus: retriedStatuses(c['retry_on_status']),
    rateLimitPerSecond: posInt(c['rate_limit_per_second'], 1_000_000) ?? null,
    mtls: mtls(c['mtls']),
  };
}
