import { hmac, safeEqual } from '@hookline/signing';

export type Scalar = string | number | boolean | null;

// Receipts and roots have a handful of fixed shapes; their sorted key lists are kept
// rather than sorted for every record (sorting and `Object.fromEntries` were 15 % of the
// api's CPU while the sealer issued receipts). A shape is named by its key list as JSON, one
// text per list: keys may hold any character (a verified bundle is anyone's JSON), and
// joined by a separator two lists could name one shape, so that a record with a key more
// took another's sorted keys and was canonicalised without it.
interface Shape {
  sorted: string[];
  /** Some key is an array index ("0", "17"): JSON.stringify would order it first. */
  indexKeys: boolean;
}
const shapes = new Map<string, Shape>();
const MAX_SHAPES = 64;
const INDEX_KEY = /^(0|[1-9]\d*)$/;

function shapeOf(record: Readonly<Record<string, Scalar>>): Shape {
  const keys = Object.keys(record);
  const id = JSON.stringify(keys);
  let shape = shapes.get(id);
  if (!shape) {
    shape = { sorted: [...keys].sort(), indexKeys: keys.some((k) => INDEX_KEY.test(k)) };
    if (shapes.size < MAX_SHAPES) shapes.set(id, shape);
  }
  return shape;
}

/**
 * Canonical bytes of a flat record: keys sorted, JSON values, no whitespace; the same bytes
 * as `JSON.stringify` of the record with its keys inserted in sorted order (undefined
 * values left out). `omit` leaves one key out (the signature).
 */
export function canonical(record: Readonly<Record<string, Scalar>>, omit?: string): string {
  const shape = shapeOf(record);
  if (shape.indexKeys) {
    return JSON.stringify(Object.fromEntries(shape.sorted.filter((k) => k !== omit).map((k) => [k, record[k]])));
  }
  let out = '{';
  for (const k of shape.sorted) {
    const v = record[k];
    if (k === omit || v === undefined) continue;
    out += (out.length > 1 ? ',' : '') + JSON.stringify(k) + ':' + JSON.stringify(v);
  }
  return out + '}';
}

/** HMAC-SHA256 (hex) over the canonical form of everything but `signature`. */
export function signRecord(key: Buffer, record: Readonly<Record<string, Scalar>>): string {
  return hmac('sha256', key, canonical(record, 'signature')).toString('hex');
}

export function checkSignature(key: Buffer, record: Readonly<Record<string, Scalar>>): boolean {
  const sig = record['signature'];
  return typeof sig === 'string' && safeEqual(sig, signRecord(key, record));
}
