import type { IdPrefix } from '@hookline/db';
import { AppError, type FieldError } from '@hookline/errors';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;
/** The largest offset PostgreSQL and Prisma take as is (Prisma wraps larger ones to a wrong page). */
export const MAX_OFFSET = 2_147_483_647;

/**
 * A page request. Cursor mode (preferred): `cursor` is the opaque base64url of the last
 * id seen; ids sort by creation time, so "newest first" is `id DESC` and the next page is
 * `id < afterId`. Offset mode: `offset` (default 0), when the caller sends it.
 */
export type Page = { limit: number; mode: 'cursor'; beforeId: string | null } | { limit: number; mode: 'offset'; offset: number };

export interface PageResult<T> {
  items: T[];
  next_cursor: string | null;
  next_offset?: number | null;
}

export function encodeCursor(id: string): string {
  return Buffer.from(id, 'utf8').toString('base64url');
}

/** The id a cursor holds, or null when it is not a cursor this API issued (not an id). */
function decodeCursor(cursor: string): string | null {
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  return /^[a-z]{2,4}_[0-9a-z]{26}$/.test(id) ? id : null;
}

function intParam(v: unknown, field: string, errors: FieldError[]): number | undefined {
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string' || !/^\d+$/.test(v)) {
    errors.push({ field, message: 'must be a non-negative integer' });
    return undefined;
  }
  return Number(v);
}

/**
 * Reads `limit`, `cursor` and `offset` from a query; out-of-range values are a 400.
 * `kind`: the id prefix of the list's rows (the ids its cursors hold). A cursor of another
 * list (another kind of id) is a 400 too: compared with this list's ids it would give an
 * empty page (ids of a prefix sorting before) or the list from its start (after).
 */
export function readPage(query: Record<string, unknown>, kind?: IdPrefix): Page {
  const errors: FieldError[] = [];
  const limit = intParam(query['limit'], 'limit', errors) ?? DEFAULT_LIMIT;
  if (limit < 1 || limit > MAX_LIMIT) errors.push({ field: 'limit', message: `must be between 1 and ${MAX_LIMIT}` });
  const offset = intParam(query['offset'], 'offset', errors);
  if (offset !== undefined && offset > MAX_OFFSET) errors.push({ field: 'offset', message: `must be at most ${MAX_OFFSET}` });
  const cursor = query['cursor'];
  let beforeId: string | null = null;
  if (cursor !== undefined && cursor !== '') {
    beforeId = typeof cursor === 'string' ? decodeCursor(cursor) : null;
    if (!beforeId) errors.push({ field: 'cursor', message: 'is not a cursor this API issued' });
    else if (kind !== undefined && !beforeId.startsWith(`${kind}_`)) errors.push({ field: 'cursor', message: 'is not a cursor of this list' });
    if (offset !== undefined) errors.push({ field: 'offset', message: 'cannot be combined with cursor' });
  }
  if (errors.length) throw AppError.validation(errors);
  return offset !== undefined ? { limit, mode: 'offset', offset } : { limit, mode: 'cursor', beforeId };
}

export interface PageArgs {
  where: { id?: { lt: string } };
  orderBy: { id: 'desc' };
  take: number;
  skip?: number;
}

/**
 * Runs one page of a newest-first query: `find` gets Prisma arguments (merge `where`
 * into its own filter, with `pageWhere` when that filter can name an `id`) and the result
 * carries the continuation.
 */
export async function findPage<T extends { id: string }>(page: Page, find: (args: PageArgs) => Promise<T[]>): Promise<PageResult<T>> {
  const args: PageArgs =
    page.mode === 'offset'
      ? { where: {}, orderBy: { id: 'desc' }, take: page.limit + 1, skip: page.offset }
      : { where: page.beforeId ? { id: { lt: page.beforeId } } : {}, orderBy: { id: 'desc' }, take: page.limit + 1 };
  return pageResult(await find(args), page);
}

/**
 * A list's filter AND the page's `id < cursor`. Spreading the page's `where` over a filter
 * would replace the filter's own `id` (an `event_id` filter), so both are kept with AND.
 */
export function pageWhere<W extends object>(where: W, a: PageArgs): W | { AND: [W, PageArgs['where']] } {
  return a.where.id ? { AND: [where, a.where] } : where;
}

/** Cuts the extra row fetched to detect a next page and builds the continuation. */
export function pageResult<T extends { id: string }>(rows: T[], page: Page): PageResult<T> {
  const more = rows.length > page.limit;
  const items = more ? rows.slice(0, page.limit) : rows;
  const last = items[items.length - 1];
  if (page.mode === 'offset') return { items, next_cursor: null, next_offset: more ? page.offset + page.limit : null };
  return { items, next_cursor: more && last ? encodeCursor(last.id) : null };
}

// ISO 8601 as SPEC.md asks, the unambiguous forms: a date-time with Z or an offset (±hh:mm,
// or ±hhmm), or a plain date (midnight UTC).
const ISO_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):?(\d{2})))?$/;

/**
 * An ISO 8601 timestamp: an RFC 3339 date-time (`2024-01-01T00:00:00Z`,
 * `…T00:00:00.5+02:00`, or the basic offset `+0200`; Z or an offset required, so nothing is
 * read in the server's local time) or a plain date (`2024-01-01`: midnight UTC), else null.
 * Impossible dates and times (`2024-02-30`, `24:00`, a leap second) are refused, not rolled
 * over: the parsed components must come back unchanged. Fractions beyond milliseconds are cut.
 */
export function parseTimestamp(v: string): Date | null {
  const m = ISO_TIMESTAMP.exec(v);
  if (!m) return null;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map((x) => Number(x ?? 0)) as [number, number, number, number, number, number];
  const at = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0-99 as 1900-1999.
  at.setUTCFullYear(y, mo - 1, d);
  at.setUTCHours(h, mi, s, Number((m[7] ?? '0').slice(0, 3).padEnd(3, '0')));
  const same = at.getUTCFullYear() === y && at.getUTCMonth() === mo - 1 && at.getUTCDate() === d && at.getUTCHours() === h && at.getUTCMinutes() === mi && at.getUTCSeconds() === s;
  const offsetH = Number(m[9] ?? 0);
  const offsetM = Number(m[10] ?? 0);
  if (!same || offsetH > 23 || offsetM > 59) return null;
  return new Date(at.getTime() - (m[8] === '-' ? -1 : 1) * (offsetH * 60 + offsetM) * 60_000);
}

/**
 * `since`/`until` (ISO 8601 timestamps, see parseTimestamp) as a created-at range, `since`
 * included and `until` not; anything else is a 400 naming the parameter, and so is an
 * `until` before `since` (a window that cannot hold anything is the caller's mistake, not an
 * empty list; `until` equal to `since` is an empty window, taken).
 */
export function readTimeRange(query: Record<string, unknown>): { gte?: Date; lt?: Date } | undefined {
  const errors: FieldError[] = [];
  const read = (name: string): Date | undefined => {
    const v = query[name];
    if (v === undefined || v === '') return undefined;
    const d = typeof v === 'string' ? parseTimestamp(v) : null;
    // PostgreSQL has no year 0 (a 500 otherwise): only years 1-9999 (UTC) are taken.
    const year = d?.getUTCFullYear() ?? 0;
    if (!d || year < 1 || year > 9999) {
      errors.push({ field: name, message: 'must be an ISO 8601 date-time with Z or an offset (e.g. 2024-01-01T00:00:00Z) or a date (2024-01-01, midnight UTC)' });
      return undefined;
    }
    return d;
  };
  const since = read('since');
  const until = read('until');
  if (since && until && until.getTime() < since.getTime()) errors.push({ field: 'until', message: 'must not be before since' });
  if (errors.length) throw AppError.validation(errors);
  if (!since && !until) return undefined;
  return { ...(since ? { gte: since } : {}), ...(until ? { lt: until } : {}) };
}

/** A string filter parameter, or undefined when absent (repeated parameters take the first). */
export function stringParam(query: Record<string, unknown>, name: string): string | undefined {
  const v = query[name];
  const s = Array.isArray(v) ? v[0] : v;
  return typeof s === 'string' && s !== '' ? s : undefined;
}

/** The same page for raw SQL: `id < beforeId` (when set), `LIMIT take OFFSET skip`. */
export function pageBounds(page: Page): { beforeId: string | null; take: number; skip: number } {
  return page.mode === 'offset' ? { beforeId: null, take: page.limit + 1, skip: page.offset } : { beforeId: page.beforeId, take: page.limit + 1, skip: 0 };
}
