import { randomBytes } from 'node:crypto';
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

/**
 * JSON when the content type says so or the body starts with `{` / `[`; form fields for
 * urlencoded bodies (Twilio); else null. A leading UTF-8 byte-order mark (EF BB BF) is
 * skipped. In JSON, an integer beyond ±(2^53−1) is read exactly, as a bigint (see parseJson).
 */
export function parseBody(contentType: string | null, body: Buffer | Uint8Array | null): unknown {
  if (!body || body.length === 0) return null;
  const ct = (contentType ?? '').toLowerCase();
  const bom = body.length >= 3 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0;
  const text = Buffer.from(body.buffer, body.byteOffset + bom, body.byteLength - bom).toString('utf8');
  const first = /\S/.exec(text)?.[0];
  if (ct.includes('json') || first === '{' || first === '[') {
    try {
      return parseJson(text);
    } catch {
      return null;
    }
  }
  if (ct.startsWith('application/x-www-form-urlencoded')) return parseForm(text);
  return null;
}

/**
 * JSON.parse, except that an integer beyond ±(2^53−1) written as one (no fraction or
 * exponent) becomes a bigint holding exactly its digits: a double would round
 * 1234567890123456789 to the same value as its neighbours within ±128, and a filter on one
 * id would match the others (json-values.ts compares bigints exactly). The common body has
 * no run of 16 digits and costs one regular-expression test more than JSON.parse.
 */
export function parseJson(text: string): unknown {
  const value = JSON.parse(text) as unknown;
  if (!SIXTEEN_DIGITS.test(text)) return value;
  // The text is valid JSON, so this scan meets each string whole (digits inside strings are
  // left alone) and each number at its start; an integer token too large for a double
  // becomes a marked string, turned into a bigint once parsed.
  let marked = false;
  const rewritten = text.replace(STRING_OR_LONG_INTEGER, (token: string, integer: string | undefined) => {
    if (integer === undefined || Number.isSafeInteger(Number(integer))) return token;
    marked = true;
    return `"${EXACT_INTEGER}${integer}"`;
  });
  return marked ? unmark(JSON.parse(rewritten) as unknown) : value;
}

const SIXTEEN_DIGITS = /\d{16}/;
/** A JSON string, or an integer token of 16 or more digits (not a fraction's or exponent's digits, nor followed by one). */
const STRING_OR_LONG_INTEGER = /"[^"\\]*(?:\\.[^"\\]*)*"|(?<![\w.+-])(-?\d{16,})(?![\d.eE])/g;
/** Marks an exact integer while parsing; random, so no body string can pose as one. */
const EXACT_INTEGER = `~hookline-exact-integer-${randomBytes(12).toString('hex')}~`;

/** Replaces marked strings with their bigints, walking with an explicit stack (no recursion, whatever the depth). */
function unmark(root: unknown): unknown {
  const big = (v: unknown): unknown => (typeof v === 'string' && v.startsWith(EXACT_INTEGER) ? BigInt(v.slice(EXACT_INTEGER.length)) : v);
  const stack: unknown[] = [root];
  while (stack.length) {
    const node = stack.pop();
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const v = node[i] as unknown;
        if (typeof v === 'string') node[i] = big(v);
        else if (typeof v === 'object' && v !== null) stack.push(v);
      }
    } else if (typeof node === 'object' && node !== null) {
      const obj = node as Record<string, unknown>;
      for (const k of Object.keys(obj)) {
        const v = obj[k];
        // JSON.parse made every member an own data property (`__proto__` included), so this sets it.
        if (typeof v === 'string') obj[k] = big(v);
        else if (typeof v === 'object' && v !== null) stack.push(v);
      }
    }
  }
  return big(root);
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
