import type { FilterDocument } from './types';

export interface RawEvent {
  type: string | null;
  ingesterId: string;
  provider: string;
  /** Stored request headers: an object of name → value(s), or [name, value] pairs. */
  headers: unknown;
  /** Raw query string, with or without the leading `?`. */
  query: string | null;
  contentType: string | null;
  body: Buffer | Uint8Array | null;
}

/** Builds what filters see of an event, parsing the body once (JSON, or form fields). */
export function buildFilterDocument(e: RawEvent): FilterDocument {
  return {
    type: e.type,
    source: { ingester_id: e.ingesterId, provider: e.provider },
    headers: normalizeHeaders(e.headers),
    query: e.query ? parseForm(e.query.replace(/^\?/, '')) : {},
    body: parseBody(e.contentType, e.body),
  };
}

/** JSON when the content type says so or the body starts with `{` / `[`; form fields for urlencoded bodies (Twilio); else null. */
export function parseBody(contentType: string | null, body: Buffer | Uint8Array | null): unknown {
  if (!body || body.length === 0) return null;
  const ct = (contentType ?? '').toLowerCase();
  const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  const first = /\S/.exec(text)?.[0];
  if (ct.includes('json') || first === '{' || first === '[') {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return null;
    }
  }
  if (ct.startsWith('application/x-www-form-urlencoded')) return parseForm(text);
  return null;
}

/** Form/query fields; a repeated name becomes an array of its values. */
export function parseForm(text: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  for (const [k, v] of new URLSearchParams(text)) {
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return { ...out };
}

function normalizeHeaders(raw: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  const add = (name: unknown, value: unknown): void => {
    if (typeof name !== 'string') return;
    const v = Array.isArray(value) ? value.map(String).join(', ') : value === undefined || value === null ? '' : String(value);
    const key = name.toLowerCase();
    out[key] = out[key] === undefined ? v : `${out[key]}, ${v}`;
  };
  if (Array.isArray(raw)) for (const pair of raw) if (Array.isArray(pair)) add(pair[0], pair[1]);
  if (raw && typeof raw === 'object' && !Array.isArray(raw)) for (const [k, v] of Object.entries(raw)) add(k, v);
  return out;
}
