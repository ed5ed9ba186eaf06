// The verdict. `verify` reads the database and the API's DLQ view; `judge` (pure, unit-tested
// in test/chaos-verify.test.ts) decides from those, the provider's log and the receivers'
// records:
// - every event the provider sent was acknowledged (a 2xx from ingest) within its deadline;
// - every acknowledged event reached every destination of its ingester (a prompt 200 at the
//   receiver), or that delivery sits in the DLQ genuinely exhausted: all its attempts made,
//   each one a retryable failure the receivers can cause (a 5xx, a timeout, a reset), the
//   receiver never served that key a 200 and did serve it at least one failure;
// - each request the receivers got carried its destination's path, its delivery's event id
//   and its acknowledged event's sequence number, and the delivery idempotency key;
// - nothing arrived that was never acknowledged; one event per provider key;
// - while PostgreSQL was down, ingest answered (a few requests at least) and every answer
//   that fell wholly inside the outage was a 503 (an outage the load did not reach, with
//   fewer than a few requests sent during it, is not judged: chaos.ts calls the run
//   INCOMPLETE then);
// - no service exited on its own; the API's DLQ is the database's;
// - the DLQ is not far larger than the receivers' failure rate explains.
// Duplicates (a second prompt 200 for one key) are counted, against a goal, not a pass
// condition.
import type { Pool } from '@hookline/db';
import type { ApiClient } from '../lib/api-client';
import type { UnexpectedExit } from '../lib/stack';
import type { ReceivedRequest, ReceiverDump } from './receiver.main';
import type { Ack, LoadAttempt, Outage } from './chaos-load';

/** What the harness configured for one destination. */
export interface DestinationSpec {
  /** The receiver path it posts to, e.g. /h1/d2. */
  path: string;
  /** Its config.max_attempts. */
  maxAttempts: number;
}

export interface DeliveryRow {
  id: string;
  event_id: string;
  destination_id: string;
  status: string;
  attempt_count: number;
  replay_count: number;
  round_start_attempt: number | null;
  last_status_code: number | null;
  last_error: string | null;
}

export interface AttemptRow {
  delivery_id: string;
  number: number;
  status_code: number | null;
  error_kind: string | null;
  error: string | null;
}

export interface Finding {
  seq: number;
  eventId: string;
  destinationId: string;
  deliveryId: string | null;
  reason: string;
}

export interface RequestMismatch {
  key: string;
  /** Which of the request's fields was wrong. */
  field: 'path' | 'eventId' | 'seq';
  got: string | number;
  want: string | number | null;
}

export interface VerifyInput {
  /** Per ingester (index = hook number), its destinations. */
  hooks: Array<{ destinationIds: string[] }>;
  destinations: Map<string, DestinationSpec>;
  load: { acked: Map<number, Ack>; unacked: number[]; attemptLog: LoadAttempt[] };
  receiver: ReceiverDump;
  deliveries: DeliveryRow[];
  /** The attempt rows of (at least) every exhausted delivery. */
  attempts: AttemptRow[];
  events: Array<{ id: string; dedup_key: string | null }>;
  /** Delivery ids the API lists as exhausted. */
  dlqApi: Set<string>;
  runId: string;
  faults: Array<{ kind: string; at: number }>;
  /** The PostgreSQL outages that happened. */
  outages: Outage[];
  unexpectedExits: UnexpectedExit[];
  /** The receivers' share of failed answers (per attempt). */
  failRate: number;
  attributionWindowMs: number;
}

export interface DlqShare {
  /** Exhausted deliveries among the expected ones (accepted as genuine or not). */
  exhausted: number;
  sharePct: number;
  /** failRate^maxAttempts: the share of deliveries whose every attempt fails by chance. */
  expectedPct: number;
  expected: number;
  /** DLQ_BOUND_FACTOR × expected + DLQ_BOUND_SLACK: a DLQ above it fails the run. */
  bound: number;
  withinBound: boolean;
}

export interface OutageCheck {
  outages: number;
  /** Requests sent and answered (or failed) wholly inside an outage: the ones judged. */
  judged: number;
  answered503: number;
  /** Judged requests not answered 503 (another status, or no answer at all). */
  not503: number;
  /** Of those, 2xx answers. */
  okWhileDown: number;
  notJudgedOverlapping: number;
  /** Requests sent while PostgreSQL was down (answered inside or not). */
  startedInside: number;
  /**
   * At least MIN_ANSWERS_IN_OUTAGE requests were sent during the outage. When not, the load
   * had (nearly) ended before it: nothing to judge, and the run is INCOMPLETE, not failed.
   */
  exercised: boolean;
  samples: Array<{ seq: number; n: number; status: string; startedInOutageMs: number; durationMs: number }>;
  /** Every judged answer a 503, and at least MIN_ANSWERS_IN_OUTAGE of them (when exercised). */
  ok: boolean;
}

export interface Verdict {
  pass: boolean;
  /** Why it fails, one line per failed check (empty when it passes). */
  failures: string[];
  acknowledgedEvents: number;
  unacknowledgedEvents: number;
  unacknowledgedSamples: number[];
  expectedDeliveries: number;
  delivered: number;
  /** Exhausted deliveries accepted as genuinely exhausted by receiver failures. */
  inDlq: number;
  /** Exhausted deliveries that were not (counted in `lost` too). */
  dlqNotGenuine: number;
  /**
   * Exhausted deliveries the receiver did serve a prompt 200 (counted as delivered: the
   * deliverer gave up on an answer that came too late for it, e.g. on a loaded machine).
   */
  exhaustedButDelivered: number;
  lost: number;
  lostSamples: Finding[];
  dlqShare: DlqShare;
  ackedEventsMissingInDb: number;
  deliveredNotAcknowledged: number;
  phantomDeliveries: number;
  /** Requests with a wrong path, event id or sequence number for their key. */
  requestMismatches: number;
  requestMismatchSamples: RequestMismatch[];
  /** Requests the receivers got without X-Service-Delivery-Idempotency-Key. */
  requestsWithoutKey: number;
  duplicateDeliveries: number;
  duplicateRatePct: number;
  duplicatesGoalMet: boolean;
  duplicatesByFault: Record<string, number>;
  lateProcessedDuplicates: number;
  eventsPerKeyOverOne: number;
  /** 2xx answers from ingest wholly inside a PostgreSQL outage (part of pgOutage). */
  okWhilePgDown: number;
  pgOutage: OutageCheck;
  unexpectedExits: Array<Omit<UnexpectedExit, 'tail'>>;
  dlqApiMatchesDb: boolean;
  receiverRequests: number;
  dbEvents: number;
  dbDeliveries: number;
  deliveryStatusCounts: Record<string, number>;
}

/** A DLQ larger than this many times what the failure rate predicts, plus the slack, fails. */
export const DLQ_BOUND_FACTOR = 10;
export const DLQ_BOUND_SLACK = 5;
/** At least this many requests must have been answered wholly inside the PostgreSQL outage. */
export const MIN_ANSWERS_IN_OUTAGE = 3;
/** Failures the receivers cause, as the deliverer records them (a dropped connection is a reset). */
const RETRYABLE_KINDS = new Set(['timeout', 'reset']);

const isRetryableFailure = (a: AttemptRow): boolean => (a.status_code !== null ? a.status_code >= 500 && a.status_code < 600 && a.error_kind === 'http_error' : a.error_kind !== null && RETRYABLE_KINDS.has(a.error_kind));

const describe = (a: AttemptRow): string => `#${a.number} ${a.status_code ?? a.error_kind ?? '?'}${a.error ? ` (${a.error.slice(0, 80)})` : ''}`;

/**
 * Why an exhausted delivery is not a genuine DLQ entry (null: it is one): it must have used
 * every attempt of its round, each a retryable failure (so no 2xx, and no 4xx or refusal
 * that ends a delivery at once: a blocked address, a purged payload, a held or deleted
 * destination's close), and the receiver must have served its key at least one failure and
 * never a prompt 200, with no more 500s recorded than the receiver served. A timeout or a
 * dropped connection may or may not have reached the receiver first, so those are not
 * matched one for one.
 */
export function dlqProblem(row: DeliveryRow, attempts: AttemptRow[], spec: DestinationSpec, served: ReceivedRequest[] | undefined): string | null {
  const roundStart = row.round_start_attempt ?? spec.maxAttempts * row.replay_count;
  const numbers = new Set(attempts.map((a) => a.number));
  const missing: number[] = [];
  for (let n = roundStart + 1; n <= roundStart + spec.maxAttempts; n++) if (!numbers.has(n)) missing.push(n);
  if (row.attempt_count < roundStart + spec.maxAttempts) return `exhausted after ${row.attempt_count - roundStart} of ${spec.maxAttempts} attempts`;
  if (missing.length) return `attempt rows missing: ${missing.join(', ')}`;
  const bad = attempts.filter((a) => !isRetryableFailure(a));
  if (bad.length) return `not a retryable failure: ${bad.map(describe).join('; ')}`;
  const rx = served ?? [];
  if (rx.some((r) => r[3] === 'ok')) return 'the receiver served it a 200';
  const failures = rx.filter((r) => r[3] !== 'ok').length;
  if (failures === 0) return 'the receiver never served it a failure (never saw it)';
  const served500 = rx.filter((r) => r[3] === 'fail').length;
  const recorded500 = attempts.filter((a) => a.status_code === 500).length;
  if (recorded500 > served500) return `${recorded500} attempts recorded a 500, the receiver served ${served500}`;
  return null;
}

/**
 * Each duplicate (a second prompt 200 for one key) attributed to the first fault that began
 * within `windowMs` after the first 200: a send whose outcome was not yet recorded when the
 * deliverer died or PostgreSQL went away is sent again once its lease runs out.
 */
function duplicatesByFault(records: Iterable<ReceivedRequest[]>, faults: Array<{ kind: string; at: number }>, windowMs: number): Record<string, number> {
  const out: Record<string, number> = {};
  const sorted = [...faults].sort((a, b) => a.at - b.at);
  for (const list of records) {
    const okAt = list.filter((r) => r[3] === 'ok').map((r) => r[4]);
    const first = okAt[0];
    if (first === undefined || okAt.length < 2) continue;
    const f = sorted.find((x) => x.at >= first - 1000 && x.at - first <= windowMs);
    const k = f ? `${f.kind}@${new Date(f.at).toISOString().slice(11, 19)}` : 'no fault just after the first 200';
    out[k] = (out[k] ?? 0) + okAt.length - 1;
  }
  return out;
}

/**
 * Ingest's answers while PostgreSQL was down: only requests wholly inside an outage are
 * judged (one overlapping its start or end may rightly have been answered either way).
 * Every judged answer must be a 503 (a 2xx, a 500, a dropped or refused connection fail),
 * and there must be a few: an ingest that hangs until PostgreSQL is back answers none.
 */
export function checkOutageAnswers(attemptLog: LoadAttempt[], outages: Outage[]): OutageCheck {
  let judged = 0, answered503 = 0, okWhileDown = 0, overlapping = 0, startedInside = 0;
  const samples: OutageCheck['samples'] = [];
  for (const a of attemptLog) {
    if (outages.some((w) => a.start >= w.from && a.start <= w.to)) startedInside++;
    const inside = outages.find((w) => a.start >= w.from && a.end <= w.to);
    if (!inside) {
      if (outages.some((w) => a.start <= w.to && a.end >= w.from)) overlapping++;
      continue;
    }
    judged++;
    if (a.status === '503') {
      answered503++;
      continue;
    }
    if (/^2\d\d$/.test(a.status)) okWhileDown++;
    if (samples.length < 20) samples.push({ seq: a.seq, n: a.n, status: a.status, startedInOutageMs: a.start - inside.from, durationMs: a.end - a.start });
  }
  const not503 = judged - answered503;
  const exercised = outages.length > 0 && startedInside >= MIN_ANSWERS_IN_OUTAGE;
  const ok = not503 === 0 && (!exercised || answered503 >= MIN_ANSWERS_IN_OUTAGE);
  return { outages: outages.length, judged, answered503, not503, okWhileDown, notJudgedOverlapping: overlapping, startedInside, exercised, samples, ok };
}

export function judge(i: VerifyInput): Verdict {
  const received = new Map(i.receiver.records);
  const byPair = new Map(i.deliveries.map((d) => [`${d.event_id}|${d.destination_id}`, d]));
  const byId = new Map(i.deliveries.map((d) => [d.id, d]));
  const eventIds = new Set(i.events.map((e) => e.id));
  const ackByEvent = new Map([...i.load.acked.values()].map((a) => [a.eventId, a]));
  const attemptsOf = new Map<string, AttemptRow[]>();
  for (const a of i.attempts) {
    const list = attemptsOf.get(a.delivery_id);
    if (list) list.push(a);
    else attemptsOf.set(a.delivery_id, [a]);
  }

  let expected = 0, delivered = 0, inDlq = 0, dlqNotGenuine = 0, exhausted = 0, exhaustedButDelivered = 0, missingInDb = 0, expectedDlq = 0;
  const lost: Finding[] = [];
  for (const ack of i.load.acked.values()) {
    if (!eventIds.has(ack.eventId)) missingInDb++;
    for (const destinationId of i.hooks[ack.hook]?.destinationIds ?? []) {
      expected++;
      const spec = i.destinations.get(destinationId);
      if (spec) expectedDlq += i.failRate ** spec.maxAttempts;
      const row = byPair.get(`${ack.eventId}|${destinationId}`);
      const rx = row ? received.get(row.id) : undefined;
      const finding = (reason: string): void => void lost.push({ seq: ack.seq, eventId: ack.eventId, destinationId, deliveryId: row?.id ?? null, reason });
      if (!row) {
        finding('no delivery row');
        continue;
      }
      if (row.status === 'exhausted') exhausted++;
      if (rx?.some((r) => r[3] === 'ok')) {
        delivered++;
        if (row.status === 'exhausted') exhaustedButDelivered++;
        continue;
      }
      if (row.status !== 'exhausted' || !i.dlqApi.has(row.id)) {
        finding(`status ${row.status}${i.dlqApi.has(row.id) ? '' : ' (not in the API DLQ)'}, no 200 at the receiver`);
        continue;
      }
      const problem = spec ? dlqProblem(row, attemptsOf.get(row.id) ?? [], spec, rx) : 'destination unknown to the harness';
      if (problem) {
        dlqNotGenuine++;
        finding(`in the DLQ but not exhausted by retryable failures: ${problem}`);
      } else inDlq++;
    }
  }

  let notAcked = 0, phantom = 0, dup = 0, lateDup = 0, mismatches = 0;
  const mismatchSamples: RequestMismatch[] = [];
  const mismatch = (m: RequestMismatch): void => {
    mismatches++;
    if (mismatchSamples.length < 20) mismatchSamples.push(m);
  };
  for (const [key, list] of received) {
    const row = byId.get(key);
    if (!row) phantom++;
    else {
      const ack = ackByEvent.get(row.event_id);
      if (!ack) notAcked++;
      const path = i.destinations.get(row.destination_id)?.path ?? null;
      for (const [p, e, s] of list) {
        if (p !== path) mismatch({ key, field: 'path', got: p, want: path });
        if (e !== row.event_id) mismatch({ key, field: 'eventId', got: e, want: row.event_id });
        // (A delivery of an event never acknowledged is counted as such, above.)
        if (ack && s !== ack.seq) mismatch({ key, field: 'seq', got: s, want: ack.seq });
      }
    }
    const ok = list.filter((r) => r[3] === 'ok').length;
    const late = list.filter((r) => r[3] === 'slow').length;
    dup += Math.max(0, ok - 1);
    lateDup += Math.max(0, ok + late - 1) - Math.max(0, ok - 1);
  }

  const perKey = new Map<string, number>();
  for (const e of i.events) if (e.dedup_key?.startsWith(i.runId)) perKey.set(e.dedup_key, (perKey.get(e.dedup_key) ?? 0) + 1);
  const statusCounts: Record<string, number> = {};
  for (const d of i.deliveries) statusCounts[d.status] = (statusCounts[d.status] ?? 0) + 1;
  const dbExhausted = new Set(i.deliveries.filter((d) => d.status === 'exhausted').map((d) => d.id));
  const duplicateRatePct = expected ? Math.round((dup / expected) * 100_000) / 1000 : 0;
  const pct = (n: number): number => (expected ? Math.round((n / expected) * 100_000) / 1000 : 0);
  const bound = DLQ_BOUND_FACTOR * expectedDlq + DLQ_BOUND_SLACK;
  const dlqShare: DlqShare = { exhausted, sharePct: pct(exhausted), expectedPct: pct(expectedDlq), expected: Math.round(expectedDlq * 10) / 10, bound: Math.round(bound * 10) / 10, withinBound: exhausted <= bound };
  const pgOutage = checkOutageAnswers(i.load.attemptLog, i.outages);

  const v: Verdict = {
    pass: false,
    failures: [],
    acknowledgedEvents: i.load.acked.size,
    unacknowledgedEvents: i.load.unacked.length,
    unacknowledgedSamples: i.load.unacked.slice(0, 20),
    expectedDeliveries: expected,
    delivered,
    inDlq,
    dlqNotGenuine,
    exhaustedButDelivered,
    lost: lost.length,
    lostSamples: lost.slice(0, 20),
    dlqShare,
    ackedEventsMissingInDb: missingInDb,
    deliveredNotAcknowledged: notAcked,
    phantomDeliveries: phantom,
    requestMismatches: mismatches,
    requestMismatchSamples: mismatchSamples,
    requestsWithoutKey: i.receiver.withoutKey,
    duplicateDeliveries: dup,
    duplicateRatePct,
    duplicatesGoalMet: duplicateRatePct < 0.5,
    duplicatesByFault: duplicatesByFault(received.values(), i.faults, i.attributionWindowMs),
    lateProcessedDuplicates: lateDup,
    eventsPerKeyOverOne: [...perKey.values()].filter((n) => n > 1).length,
    okWhilePgDown: pgOutage.okWhileDown,
    pgOutage,
    unexpectedExits: i.unexpectedExits.map(({ tail: _tail, ...e }) => e),
    dlqApiMatchesDb: dbExhausted.size === i.dlqApi.size && [...dbExhausted].every((id) => i.dlqApi.has(id)),
    receiverRequests: i.receiver.requests,
    dbEvents: i.events.length,
    dbDeliveries: i.deliveries.length,
    deliveryStatusCounts: statusCounts,
  };
  const f = v.failures;
  if (v.acknowledgedEvents === 0) f.push('no event was acknowledged');
  if (v.unacknowledgedEvents) f.push(`${v.unacknowledgedEvents} events never acknowledged by ingest within the provider's deadline`);
  if (v.lost) f.push(`${v.lost} expected deliveries lost (${v.dlqNotGenuine} of them in the DLQ without being exhausted by retryable failures)`);
  if (v.ackedEventsMissingInDb) f.push(`${v.ackedEventsMissingInDb} acknowledged events missing in the database`);
  if (v.deliveredNotAcknowledged) f.push(`${v.deliveredNotAcknowledged} deliveries of events never acknowledged`);
  if (v.phantomDeliveries) f.push(`${v.phantomDeliveries} requests under keys that are no delivery`);
  if (v.requestMismatches) f.push(`${v.requestMismatches} request fields that do not match their delivery (path, event id or sequence)`);
  if (v.requestsWithoutKey) f.push(`${v.requestsWithoutKey} requests without X-Service-Delivery-Idempotency-Key`);
  if (v.eventsPerKeyOverOne) f.push(`${v.eventsPerKeyOverOne} provider keys stored as more than one event`);
  if (!v.dlqApiMatchesDb) f.push("the API's DLQ is not the database's");
  if (!dlqShare.withinBound) f.push(`DLQ share ${dlqShare.sharePct} % (${exhausted}) above the bound ${dlqShare.bound} (${DLQ_BOUND_FACTOR}× the ${dlqShare.expected} the failure rate predicts + ${DLQ_BOUND_SLACK})`);
  if (!pgOutage.ok) f.push(pgOutage.not503 ? `${pgOutage.not503} ingest answers wholly inside the PostgreSQL outage were not 503 (${pgOutage.okWhileDown} of them 2xx)` : `only ${pgOutage.answered503} of the ${pgOutage.startedInside} requests sent while PostgreSQL was down were answered before it came back (want ${MIN_ANSWERS_IN_OUTAGE}+ answers wholly inside the outage)`);
  if (v.unexpectedExits.length) f.push(`${v.unexpectedExits.length} service exits no fault caused: ${v.unexpectedExits.map((e) => `${e.service} pid ${e.pid} (${e.phase === 'start' ? 'while starting, ' : ''}code ${e.code}, signal ${e.signal})`).join(', ')}`);
  v.pass = f.length === 0;
  return v;
}

/** The DLQ as the API shows it: every exhausted delivery of the tenant, page by page. */
async function dlqFromApi(api: ApiClient): Promise<Set<string>> {
  const ids = new Set<string>();
  let cursor: string | null = null;
  for (let page = 0; page < 10_000; page++) {
    const q: string = `/v1/tenants/${api.tenant.tenantId}/deliveries?status=exhausted&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const r = await api.call<{ deliveries: Array<{ id: string; status: string }>; next_cursor: string | null }>('GET', q);
    if (r.status !== 200) throw new Error(`DLQ list: ${r.status} ${JSON.stringify(r.body)}`);
    for (const d of r.body.deliveries) if (d.status === 'exhausted') ids.add(d.id);
    cursor = r.body.next_cursor;
    if (!cursor || r.body.deliveries.length === 0) break;
  }
  return ids;
}

export type VerifyContext = Omit<VerifyInput, 'deliveries' | 'attempts' | 'events' | 'dlqApi'>;

/** Reads the run's deliveries, the exhausted ones' attempts, the events and the API's DLQ, and judges. */
export async function verify(pool: Pool, api: ApiClient, ctx: VerifyContext): Promise<Verdict> {
  const deliveries = (
    await pool.query<DeliveryRow>('SELECT id, event_id, destination_id, status, attempt_count, replay_count, round_start_attempt, last_status_code, last_error FROM deliveries')
  ).rows;
  const attempts = (
    await pool.query<AttemptRow>(
      `SELECT a.delivery_id, a.number, a.status_code, a.error_kind, a.error FROM delivery_attempts a
       WHERE a.delivery_id IN (SELECT id FROM deliveries WHERE status = 'exhausted') ORDER BY a.delivery_id, a.number`,
    )
  ).rows;
  const events = (await pool.query<{ id: string; dedup_key: string | null }>('SELECT id, dedup_key FROM events')).rows;
  const dlqApi = await dlqFromApi(api);
  return judge({ ...ctx, deliveries, attempts, events, dlqApi });
}
