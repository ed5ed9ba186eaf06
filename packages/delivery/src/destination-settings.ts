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
  /**
   * Configured headers left out because their values cannot be sent (HEADER_VALUE_PATTERN):
   * stored before the API refused such values. Absent when there are none; the sender says
   * so once (warnUnsendableHeaders).
   */
  unsendableHeaders?: string[];
}

// Headers a destination may not set: hop-by-hop ones (undici refuses them) and the ones
// the deliverer owns, so that a config cannot forge a signature or the idempotency key, nor
// replace the User-Agent every request carries. The API refuses them on write (the same
// expression); here they are left out of what a stored config sends.
export const RESERVED_HEADER = /^(host|content-length|content-type|connection|keep-alive|transfer-encoding|te|trailer|upgrade|expect|proxy-.*|traceparent|tracestate|user-agent|webhook-.*|x-service-.*|x-hookline-.*)$/i;

/**
 * A header value that can be sent: tab, visible ASCII (0x20-0x7e) and 0x80-0xff (obs-text,
 * sent as one byte each). What undici (and Node's http) accepts: a control character, DEL
 * or a character beyond U+00FF ('€') makes it throw before anything is sent. The API's
 * schema refuses other values on write (a JSON Schema pattern, hence a string).
 */
export const HEADER_VALUE_PATTERN = '^[\\t\\x20-\\x7e\\x80-\\xff]*$';
const HEADER_VALUE = new RegExp(HEADER_VALUE_PATTERN);

/** Whether undici can send `v` as a header value (HEADER_VALUE_PATTERN). */
export function isSendableHeaderValue(v: string): boolean {
  return HEADER_VALUE.test(v);
}

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

/**
 * The headers a stored config sends. Reserved names, malformed names and non-strings are
 * left out, as ever; so are values undici cannot send (stored before the API refused them):
 * sending them would throw on every attempt, counted against the destination as if it had
 * failed. Those are named in `unsendable` so that the sender can say so.
 */
function headerMap(v: unknown): { headers: Record<string, string>; unsendable: string[] } {
  const headers: Record<string, string> = {};
  const unsendable: string[] = [];
  if (!v || typeof v !== 'object' || Array.isArray(v)) return { headers, unsendable };
  for (const [k, val] of Object.entries(v as Record<string, unknown>)) {
    if (typeof val !== 'string' || RESERVED_HEADER.test(k) || !/^[!#$%&'*+.^_`|~0-9a-z-]+$/i.test(k)) continue;
    if (!HEADER_VALUE.test(val)) unsendable.push(k.toLowerCase());
    else headers[k.toLowerCase()] = val;
  }
  return { headers, unsendable };
}

/** Destinations (and the names of their unsendable headers) already warned about by this process. */
const warnedUnsendable = new Set<string>();

/**
 * Once per destination and set of header names (per process), a warning naming the headers
 * of `settings` left out because their values cannot be sent: the request goes without
 * them, and the fix is to set them again (the API now refuses such values). Names only,
 * never values (they may be credentials).
 */
export function warnUnsendableHeaders(logger: { warn(msg: string, fields?: Record<string, unknown>): void }, destinationId: string, settings: DestinationSettings): void {
  const names = settings.unsendableHeaders;
  if (!names || names.length === 0) return;
  const key = `${destinationId} ${names.join(' ')}`;
  if (warnedUnsendable.has(key)) return;
  if (warnedUnsendable.size >= 10_000) warnedUnsendable.clear();
  warnedUnsendable.add(key);
  logger.warn('destination headers left out of its requests: their stored values cannot be sent (a control character, DEL or a character beyond U+00FF); set them again', {
    destination_id: destinationId,
    header_names: names,
  });
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
  const { headers, unsendable } = headerMap(c['headers']);
  return {
    method: METHODS.has(m) ? m : 'POST',
    headers,
    timeoutMs: posInt(c['timeout_ms'], MAX_DESTINATION_TIMEOUT_MS) ?? defaults.timeoutMs,
    maxConcurrency: posInt(c['max_concurrency'], 1000) ?? defaults.maxConcurrency,
    maxAttempts: posInt(c['max_attempts'], 100) ?? defaults.maxAttempts,
    retryScheduleMs: intList(c['retry_schedule_ms'], 0, 7 * 86_400_000) ?? defaults.retryScheduleMs,
    retryOnStatus: retriedStatuses(c['retry_on_status']),
    rateLimitPerSecond: posInt(c['rate_limit_per_second'], 1_000_000) ?? null,
    mtls: mtls(c['mtls']),
    ...(unsendable.length > 0 ? { unsendableHeaders: unsendable } : {}),
  };
}
