import { idFloor, type IdPrefix } from '@hookline/db';

/**
 * Time windows as id ranges. Ids are time-sortable (packages/db/src/ids.ts): the time an id
 * was made leads it. The time columns a list or a count filters on (events.received_at,
 * deliveries.created_at, delivery_attempts.started_at, audit_logs.created_at,
 * ingest_rejections.created_at) have no index, but (tenant_id, id) and the primary key do, so
 * a window on a time column is also given as an id range: the index then reads the window
 * instead of the whole history. The exact time predicate stays as well, so the rows found
 * are the same; the id range only has to hold every row the time predicate keeps.
 *
 * An id's time and its row's time are not the same instant. An event id is made by ingest
 * after it stamped received_at (same clock, within the request); a delivery id by the router
 * just before its insert stamps created_at with PostgreSQL's clock; an attempt id when its
 * outcome is settled (deliverer) or its edge report recorded (the api; the agent's started_at
 * may lie up to the lease window, minutes, before it or the signature tolerance after it);
 * audit and rejection ids by the writer, their created_at by PostgreSQL. So the range is
 * widened by ID_WINDOW_SLACK_MS on each side: clock skew between hosts and the edge report
 * window are minutes, an hour covers them with room to spare. A row whose id was made more
 * than that away from its time (hand-written SQL, a host clock hours off) can be left out.
 */
export const ID_WINDOW_SLACK_MS = 60 * 60 * 1000;

/** The lowest id of `prefix` a row whose time is at or after `since` can have. */
export function idAtOrAfter(prefix: IdPrefix, since: Date | number): string {
  return idFloor(prefix, Number(since) - ID_WINDOW_SLACK_MS);
}

/** An id bound above every id of `prefix` a row whose time is before `until` can have. */
export function idBefore(prefix: IdPrefix, until: Date | number): string {
  return idFloor(prefix, Number(until) + ID_WINDOW_SLACK_MS);
}

/**
 * A `since`/`until` range (readTimeRange) as Prisma id conditions, to AND with the list's
 * filter (never spread: the list's own `id` filter or the page's cursor would replace it).
 */
export function idRangeWhere(prefix: IdPrefix, range: { gte?: Date; lt?: Date } | undefined): { id: { gte: string } | { lt: string } }[] {
  if (!range) return [];
  return [...(range.gte ? [{ id: { gte: idAtOrAfter(prefix, range.gte) } }] : []), ...(range.lt ? [{ id: { lt: idBefore(prefix, range.lt) } }] : [])];
}
