import type { IncomingHttpHeaders } from 'node:http';
import type { VerifyResult } from '@hookline/signing';

export type { VerifyResult };

/** What a provider sees of one inbound request. */
export interface ProviderContext {
  /** The exact bytes received. */
  body: Buffer;
  /** Request headers, names in lower case (as node:http gives them). */
  headers: IncomingHttpHeaders;
  /** Plain-text signing secrets of the ingester (up to two: rotation). */
  secrets: readonly string[];
  toleranceSeconds: number;
  nowSeconds: number;
  /** The public URL the provider called: INGEST_PUBLIC_URL + path + query. */
  url: string;
  /** What follows `/in/<id>` in that URL, path and `?query` as received ('' for the bare hook URL). */
  hookSuffix: string;
  /** config.twilio_url_suffixes: the suffixes the customer gave Twilio (default ['']: the bare hook URL). */
  twilioUrlSuffixes: readonly string[];
  /** The body parsed as JSON (once), or undefined when it is not JSON. */
  json(): unknown;
  /** The hex sha256 of `body`, worked out once per request whoever asks. */
  bodySha256(): string;
  /** The ingester posted to, and ingest's logger: for warnings about its stored settings. */
  ingesterId: string;
  logger: { warn(message: string, meta: Record<string, unknown>): unknown };
}

export interface ProviderAdapter {
  verify(ctx: ProviderContext): VerifyResult;
  eventType(ctx: ProviderContext): string | null;
  dedupId(ctx: ProviderContext): string | null;
  /**
   * True when dedupId names one signed request rather than one delivery (generic: `t` and the
   * body), so that a sender's re-signed retry gets another id: its Idempotency-Key is then
   * held as a second key (dedup-key.ts).
   */
  idPerSignature?: boolean;
}

/** The first value of a header (node joins most repeated headers already). */
export function header(ctx: Pick<ProviderContext, 'headers'>, name: string): string | undefined {
  const v = ctx.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** A non-empty string member of the JSON body's top level, else null. */
export function bodyString(ctx: ProviderContext, key: string): string | null {
  const doc = ctx.json();
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return null;
  const v = (doc as Record<string, unknown>)[key];
  return typeof v === 'string' && v !== '' ? v : null;
}

export const OK: VerifyResult = { ok: true };
export const fail = (reason: Exclude<VerifyResult, { ok: true }>['reason']): VerifyResult => ({ ok: false, reason });
