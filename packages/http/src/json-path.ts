/**
 * A tiny, safe path getter for an ingester's `event_type_path`: `$.type`, `data.kind`,
 * `$.items[0].name`, `$['odd-key']`. Own properties only, bounded length; no
 * expressions, filters or wildcards (those belong to the router's filters).
 * Shared so that the API accepts exactly the paths ingest can evaluate: the API refuses a
 * path parsePath rejects; ingest reads the event type with getStringAt.
 */
const MAX_SEGMENTS = 32;

export function parsePath(path: string): (string | number)[] | null {
  let s = path.trim();
  if (s.startsWith('$')) s = s.slice(1);
  const out: (string | number)[] = [];
  const re = /^(?:\.([A-Za-z0-9_$-]+)|\[(\d+)\]|\['([^']*)'\]|\["([^"]*)"\]|([A-Za-z0-9_$-]+))/;
  let first = true;
  while (s.length > 0) {
    const m = re.exec(s);
    // A bare name is only allowed first (`data.kind` without `$.`).
    if (!m || (m[5] !== undefined && !first)) return null;
    if (m[2] !== undefined) out.push(Number(m[2]));
    else out.push((m[1] ?? m[3] ?? m[4] ?? m[5])!);
    s = s.slice(m[0].length);
    first = false;
    if (out.length > MAX_SEGMENTS) return null;
  }
  return out;
}

export function getPath(value: unknown, path: string): unknown {
  const segments = parsePath(path);
  if (!segments) return undefined;
  let cur: unknown = value;
  for (const seg of segments) {
    if (typeof seg === 'number') {
      if (!Array.isArray(cur) || seg >= cur.length) return undefined;
      cur = cur[seg];
    } else {
      if (cur === null || typeof cur !== 'object' || Array.isArray(cur) || !Object.prototype.hasOwnProperty.call(cur, seg)) return undefined;
      cur = (cur as Record<string, unknown>)[seg];
    }
  }
  return cur;
}

/** The value at `path` as an event type: strings as they are, numbers and booleans as text. */
export function getStringAt(value: unknown, path: string): string | null {
  const v = getPath(value, path);
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return null;
}
