// The chaos verdict (bench/chaos/verify.ts `judge`) on made-up runs: a clean one passes;
// a DLQ entry that was not exhausted by retryable failures, an event never acknowledged, a
// request with the wrong path, event id or sequence, and the other checks each fail it.
import type { Ack, LoadAttempt, Outage } from '../bench/chaos/chaos-load';
import type { ReceivedRequest, Served } from '../bench/chaos/receiver.main';
import { checkOutageAnswers, judge, type AttemptRow, type DeliveryRow, type DestinationSpec, type VerifyInput } from '../bench/chaos/verify';

const T = 1_700_000_000_000;
const RUN = 'chaos-test';

const req = (p: string, e: string, s: number, o: Served, dt = 0): ReceivedRequest => [p, e, s, o, T + dt];
const row = (id: string, eventId: string, destinationId: string, status: string, attemptCount: number): DeliveryRow => ({
  id,
  event_id: eventId,
  destination_id: destinationId,
  status,
  attempt_count: attemptCount,
  replay_count: 0,
  round_start_attempt: null,
  last_status_code: null,
  last_error: null,
});
const att = (deliveryId: string, number: number, what: number | 'timeout' | 'reset' | 'ssrf_blocked' | 'payload_missing' | 'refused'): AttemptRow =>
  typeof what === 'number'
    ? { delivery_id: deliveryId, number, status_code: what, error_kind: what >= 200 && what < 300 ? null : 'http_error', error: `HTTP ${what}` }
    : { delivery_id: deliveryId, number, status_code: null, error_kind: what, error: what };
const genuine = (id: string): AttemptRow[] => [att(id, 1, 500), att(id, 2, 'timeout'), att(id, 3, 'reset'), att(id, 4, 500), att(id, 5, 'timeout')];

/**
 * Two ingesters: h0 -> d1 (/h0/d1); h1 -> d1, d2 (/h1/d1, /h1/d2). Three events acknowledged
 * (seq 0 and 2 on h0, seq 1 on h1): four deliveries, one of them (evt_1 -> dst_c) genuinely
 * exhausted after five failures the receiver served. One PostgreSQL outage, answered 503.
 */
function cleanRun(): VerifyInput {
  const destinations = new Map<string, DestinationSpec>([
    ['dst_a', { path: '/h0/d1', maxAttempts: 5 }],
    ['dst_b', { path: '/h1/d1', maxAttempts: 5 }],
    ['dst_c', { path: '/h1/d2', maxAttempts: 5 }],
  ]);
  const acks: Ack[] = [
    { seq: 0, hook: 0, eventId: 'evt_0', attempts: 1 },
    { seq: 1, hook: 1, eventId: 'evt_1', attempts: 1 },
    { seq: 2, hook: 0, eventId: 'evt_2', attempts: 4 },
  ];
  const outages: Outage[] = [{ from: T + 1000, to: T + 4000 }];
  const attemptLog: LoadAttempt[] = [
    { seq: 0, n: 1, start: T, end: T + 5, status: '202' },
    { seq: 1, n: 1, start: T + 10, end: T + 15, status: '202' },
    { seq: 2, n: 1, start: T + 1100, end: T + 1110, status: '503' },
    { seq: 2, n: 2, start: T + 1300, end: T + 1310, status: '503' },
    { seq: 2, n: 3, start: T + 1700, end: T + 1705, status: '503' },
    // Sent inside the outage, answered after it: not judged.
    { seq: 2, n: 4, start: T + 3990, end: T + 4200, status: '202' },
  ];
  return {
    hooks: [{ destinationIds: ['dst_a'] }, { destinationIds: ['dst_b', 'dst_c'] }],
    destinations,
    load: { acked: new Map(acks.map((a) => [a.seq, a])), unacked: [], attemptLog },
    receiver: {
      requests: 10,
      withoutKey: 0,
      withoutKeySamples: [],
      records: [
        ['dlv_0a', [req('/h0/d1', 'evt_0', 0, 'ok')]],
        ['dlv_1b', [req('/h1/d1', 'evt_1', 1, 'fail'), req('/h1/d1', 'evt_1', 1, 'ok', 300)]],
        ['dlv_1c', [req('/h1/d2', 'evt_1', 1, 'fail'), req('/h1/d2', 'evt_1', 1, 'slow', 300), req('/h1/d2', 'evt_1', 1, 'drop', 900), req('/h1/d2', 'evt_1', 1, 'fail', 1800), req('/h1/d2', 'evt_1', 1, 'slow', 3500)]],
        ['dlv_2a', [req('/h0/d1', 'evt_2', 2, 'ok', 4300)]],
      ],
    },
    deliveries: [row('dlv_0a', 'evt_0', 'dst_a', 'delivered', 1), row('dlv_1b', 'evt_1', 'dst_b', 'delivered', 2), row('dlv_1c', 'evt_1', 'dst_c', 'exhausted', 5), row('dlv_2a', 'evt_2', 'dst_a', 'delivered', 1)],
    attempts: genuine('dlv_1c'),
    events: [
      { id: 'evt_0', dedup_key: `${RUN}-0` },
      { id: 'evt_1', dedup_key: `${RUN}-1` },
      { id: 'evt_2', dedup_key: `${RUN}-2` },
    ],
    dlqApi: new Set(['dlv_1c']),
    runId: RUN,
    faults: [],
    outages,
    unexpectedExits: [],
    failRate: 0.3,
    attributionWindowMs: 10_000,
  };
}

const records = (i: VerifyInput): Map<string, ReceivedRequest[]> => new Map(i.receiver.records);
const setRecords = (i: VerifyInput, m: Map<string, ReceivedRequest[]>): void => void (i.receiver.records = [...m]);
const exhaustedRow = (i: VerifyInput): DeliveryRow => i.deliveries.find((d) => d.id === 'dlv_1c')!;

test('a clean run passes: every delivery made or genuinely exhausted, the outage answered 503', () => {
  const v = judge(cleanRun());
  expect(v.failures).toEqual([]);
  expect(v.pass).toBe(true);
  expect(v).toMatchObject({ expectedDeliveries: 4, delivered: 3, inDlq: 1, dlqNotGenuine: 0, lost: 0, requestMismatches: 0, unacknowledgedEvents: 0 });
  expect(v.pgOutage).toMatchObject({ judged: 3, answered503: 3, not503: 0, notJudgedOverlapping: 1, ok: true });
  expect(v.dlqShare).toMatchObject({ exhausted: 1, withinBound: true });
});

describe('a DLQ entry that was not exhausted by retryable failures fails the run', () => {
  const cases: Array<[string, (i: VerifyInput) => void]> = [
    ['a 4xx sent it to the DLQ at once', (i) => {
      exhaustedRow(i).attempt_count = 1;
      i.attempts = [att('dlv_1c', 1, 400)];
    }],
    ['a blocked address (no request sent)', (i) => {
      exhaustedRow(i).attempt_count = 1;
      i.attempts = [att('dlv_1c', 1, 'ssrf_blocked')];
      const m = records(i);
      m.delete('dlv_1c');
      setRecords(i, m);
    }],
    ['a purged payload', (i) => {
      exhaustedRow(i).attempt_count = 1;
      i.attempts = [att('dlv_1c', 1, 'payload_missing')];
    }],
    ["a held or deleted destination's close (no attempt at all)", (i) => {
      exhaustedRow(i).attempt_count = 0;
      i.attempts = [];
    }],
    ['all attempts made, but the last one a 404', (i) => {
      i.attempts = [...genuine('dlv_1c').slice(0, 4), att('dlv_1c', 5, 404)];
    }],
    ['all attempts made, one of them a refused connection (the receivers never refuse)', (i) => {
      i.attempts = [...genuine('dlv_1c').slice(0, 2), att('dlv_1c', 3, 'refused'), ...genuine('dlv_1c').slice(3)];
    }],
    ['attempt_count says 5, but attempt rows 2 and 3 are missing', (i) => {
      i.attempts = genuine('dlv_1c').filter((a) => a.number !== 2 && a.number !== 3);
    }],
    ['the receiver never saw the key', (i) => {
      const m = records(i);
      m.delete('dlv_1c');
      setRecords(i, m);
    }],
    ['the receiver saw it only as a 400 without a key (not a failure it served for the key)', (i) => {
      const m = records(i);
      m.delete('dlv_1c');
      setRecords(i, m);
      i.receiver.withoutKey = 5;
    }],
    ['more 500s recorded than the receiver served', (i) => {
      i.attempts = [att('dlv_1c', 1, 500), att('dlv_1c', 2, 500), att('dlv_1c', 3, 500), att('dlv_1c', 4, 500), att('dlv_1c', 5, 'timeout')];
    }],
  ];
  test.each(cases)('%s', (_name, spoil) => {
    const input = cleanRun();
    spoil(input);
    const v = judge(input);
    expect(v.pass).toBe(false);
    expect(v.lost).toBe(1);
    expect(v.dlqNotGenuine).toBe(1);
    expect(v.inDlq).toBe(0);
    expect(v.lostSamples[0]).toMatchObject({ deliveryId: 'dlv_1c', reason: expect.stringMatching(/not exhausted by retryable failures/) });
  });

  test('a replayed delivery is judged on its own round of attempts', () => {
    const input = cleanRun();
    Object.assign(exhaustedRow(input), { replay_count: 1, round_start_attempt: 2, attempt_count: 7 });
    input.attempts = [att('dlv_1c', 1, 500), att('dlv_1c', 2, 500), ...genuine('dlv_1c').map((a) => ({ ...a, number: a.number + 2 }))];
    input.receiver.records = input.receiver.records.map(([k, l]) => [k, k === 'dlv_1c' ? [...l, req('/h1/d2', 'evt_1', 1, 'fail'), req('/h1/d2', 'evt_1', 1, 'fail')] : l]);
    expect(judge(input).failures).toEqual([]);
    exhaustedRow(input).attempt_count = 6;
    expect(judge(input).dlqNotGenuine).toBe(1);
  });
});

describe('events never acknowledged fail the run', () => {
  test('one event given up on after its deadline', () => {
    const input = cleanRun();
    input.load.unacked = [3];
    const v = judge(input);
    expect(v.pass).toBe(false);
    expect(v.unacknowledgedEvents).toBe(1);
    expect(v.failures).toEqual([expect.stringMatching(/never acknowledged/)]);
  });

  test('no event acknowledged at all', () => {
    const input = cleanRun();
    input.load.acked = new Map();
    input.receiver.records = [];
    expect(judge(input).pass).toBe(false);
  });
});

describe('a request with the wrong path, event id or sequence fails the run (every request of a key, not only its first)', () => {
  const cases: Array<[string, 'path' | 'eventId' | 'seq', ReceivedRequest]> = [
    ['path of another destination', 'path', req('/h1/d2', 'evt_1', 1, 'ok', 400)],
    ['event id of another event', 'eventId', req('/h1/d1', 'evt_0', 1, 'ok', 400)],
    ["another event's body (sequence)", 'seq', req('/h1/d1', 'evt_1', 0, 'ok', 400)],
    ['an unreadable body (sequence -1)', 'seq', req('/h1/d1', 'evt_1', -1, 'ok', 400)],
  ];
  test.each(cases)('%s', (_name, field, wrong) => {
    const input = cleanRun();
    const m = records(input);
    // dlv_1b's first two requests are right; a third, later one is wrong.
    m.set('dlv_1b', [...m.get('dlv_1b')!, wrong]);
    setRecords(input, m);
    const v = judge(input);
    expect(v.pass).toBe(false);
    expect(v.requestMismatches).toBe(1);
    expect(v.requestMismatchSamples).toEqual([expect.objectContaining({ key: 'dlv_1b', field })]);
  });

  test('the first request of a key wrong', () => {
    const input = cleanRun();
    const m = records(input);
    m.set('dlv_0a', [req('/h0/d2', 'evt_0', 0, 'ok')]);
    setRecords(input, m);
    expect(judge(input).requestMismatchSamples).toEqual([expect.objectContaining({ key: 'dlv_0a', field: 'path', want: '/h0/d1' })]);
  });
});

describe('the other checks', () => {
  test('requests without the idempotency key fail the run', () => {
    const input = cleanRun();
    input.receiver.withoutKey = 1;
    expect(judge(input).failures).toEqual([expect.stringMatching(/without X-Service-Delivery-Idempotency-Key/)]);
  });

  test("the API's DLQ differing from the database fails the run", () => {
    const input = cleanRun();
    input.dlqApi = new Set(['dlv_1c', 'dlv_other']);
    expect(judge(input).failures).toEqual([expect.stringMatching(/API's DLQ/)]);
  });

  test('one provider key stored as two events fails the run', () => {
    const input = cleanRun();
    input.events.push({ id: 'evt_1b', dedup_key: `${RUN}-1` });
    expect(judge(input).failures).toEqual([expect.stringMatching(/more than one event/)]);
  });

  test('an exhausted delivery the receiver did answer 200 counts as delivered (and is reported)', () => {
    const input = cleanRun();
    input.deliveries.find((d) => d.id === 'dlv_1b')!.status = 'exhausted';
    input.dlqApi.add('dlv_1b');
    const v = judge(input);
    expect(v).toMatchObject({ pass: true, delivered: 3, inDlq: 1, exhaustedButDelivered: 1, dlqShare: expect.objectContaining({ exhausted: 2 }) });
  });

  test('a delivery of an event never acknowledged fails the run', () => {
    const input = cleanRun();
    input.deliveries.push(row('dlv_9a', 'evt_9', 'dst_a', 'delivered', 1));
    input.receiver.records.push(['dlv_9a', [req('/h0/d1', 'evt_9', 9, 'ok')]]);
    expect(judge(input).deliveredNotAcknowledged).toBe(1);
    expect(judge(input).pass).toBe(false);
  });

  test('a service exit no fault caused fails the run', () => {
    const input = cleanRun();
    input.unexpectedExits = [{ service: 'router', phase: 'running', pid: 42, code: 1, signal: null, at: T, restartedAs: 43, tail: 'boom' }];
    const v = judge(input);
    expect(v.failures).toEqual([expect.stringMatching(/router pid 42 \(code 1/)]);
    expect(v.unexpectedExits[0]).not.toHaveProperty('tail');
    input.unexpectedExits = [{ service: 'deliverer', phase: 'start', pid: 44, code: 1, signal: null, at: T, restartedAs: null, tail: 'ECONNREFUSED' }];
    expect(judge(input).failures).toEqual([expect.stringMatching(/deliverer pid 44 \(while starting, code 1/)]);
  });

  test('a DLQ far above what the failure rate predicts fails the run; one within the bound passes', () => {
    // 20 acknowledged events to one destination, 12 of them genuinely exhausted: 0.3^5 × 20
    // predicts 0.05; the bound is 10 × 0.05 + 5 = 5.5.
    const input = cleanRun();
    input.hooks = [{ destinationIds: ['dst_a'] }];
    input.load.acked = new Map(Array.from({ length: 20 }, (_, s) => [s, { seq: s, hook: 0, eventId: `evt_${s}`, attempts: 1 }]));
    input.events = Array.from({ length: 20 }, (_, s) => ({ id: `evt_${s}`, dedup_key: `${RUN}-${s}` }));
    input.deliveries = Array.from({ length: 20 }, (_, s) => row(`dlv_${s}`, `evt_${s}`, 'dst_a', s < 12 ? 'exhausted' : 'delivered', s < 12 ? 5 : 1));
    input.attempts = Array.from({ length: 12 }, (_, s) => genuine(`dlv_${s}`)).flat();
    input.dlqApi = new Set(Array.from({ length: 12 }, (_, s) => `dlv_${s}`));
    const failures = (s: number): ReceivedRequest[] => [0, 1, 2, 3, 4].map((k) => req('/h0/d1', `evt_${s}`, s, k % 2 ? 'slow' : 'fail'));
    input.receiver.records = Array.from({ length: 20 }, (_, s): [string, ReceivedRequest[]] => [`dlv_${s}`, s < 12 ? failures(s) : [req('/h0/d1', `evt_${s}`, s, 'ok')]]);
    const v = judge(input);
    expect(v.inDlq).toBe(12);
    expect(v.dlqShare).toMatchObject({ exhausted: 12, sharePct: 60, withinBound: false, bound: 5.5 });
    expect(v.failures).toEqual([expect.stringMatching(/DLQ share 60 %/)]);

    input.deliveries.forEach((d, s) => s >= 5 && s < 12 && Object.assign(d, { status: 'delivered', attempt_count: 1 }));
    input.attempts = input.attempts.filter((a) => Number(a.delivery_id.slice(4)) < 5);
    input.dlqApi = new Set(Array.from({ length: 5 }, (_, s) => `dlv_${s}`));
    input.receiver.records = input.receiver.records.map(([k, l]) => [k, Number(k.slice(4)) >= 5 && Number(k.slice(4)) < 12 ? [...l, req('/h0/d1', `evt_${k.slice(4)}`, Number(k.slice(4)), 'ok')] : l]);
    expect(judge(input).failures).toEqual([]);
  });
});

describe('ingest while PostgreSQL is down', () => {
  const outage: Outage = { from: T + 1000, to: T + 4000 };
  const a = (start: number, end: number, status: string, seq = 7): LoadAttempt => ({ seq, n: 1, start: T + start, end: T + end, status });
  const three503 = [a(1100, 1110, '503'), a(1200, 1210, '503'), a(1300, 1310, '503')];

  test.each([
    ['a 2xx', '202'],
    ['a 500', '500'],
    ['a dropped connection', 'error:ECONNRESET'],
    ['a refused connection', 'error:ECONNREFUSED'],
  ])('%s wholly inside the outage fails it', (_name, status) => {
    const c = checkOutageAnswers([...three503, a(2000, 2050, status)], [outage]);
    expect(c).toMatchObject({ ok: false, judged: 4, not503: 1, okWhileDown: status === '202' ? 1 : 0 });
    const input = cleanRun();
    input.load.attemptLog.push(a(2000, 2050, status));
    expect(judge(input).failures).toEqual([expect.stringMatching(/not 503/)]);
  });

  test('requests overlapping the edges are not judged', () => {
    const c = checkOutageAnswers([...three503, a(900, 1100, '202'), a(3900, 4100, 'error:ECONNRESET')], [outage]);
    expect(c).toMatchObject({ ok: true, judged: 3, notJudgedOverlapping: 2 });
  });

  test('requests sent during the outage but answered only after it (an ingest that hangs) fail it', () => {
    const hung = [a(1100, 4100, '503'), a(1200, 4200, '202'), a(2000, 4300, '202', 8), a(3000, 4050, '503', 9)];
    expect(checkOutageAnswers([...hung, ...three503.slice(0, 2)], [outage])).toMatchObject({ ok: false, exercised: true, startedInside: 6, judged: 2, answered503: 2, notJudgedOverlapping: 4 });
    const input = cleanRun();
    input.load.attemptLog = [...input.load.attemptLog.filter((x) => x.status !== '503'), ...hung];
    expect(judge(input).failures).toEqual([expect.stringMatching(/only 0 of the 5 requests sent while PostgreSQL was down were answered before it came back/)]);
  });

  test('an outage the load did not reach (fewer than three requests sent during it) is not judged, and says so', () => {
    const c = checkOutageAnswers([a(0, 10, '202'), a(1500, 1510, '503'), a(5000, 5010, '202')], [outage]);
    expect(c).toMatchObject({ ok: true, exercised: false, startedInside: 1, judged: 1 });
    // …but a wrong answer among the few is still a failure.
    expect(checkOutageAnswers([a(1500, 1510, '500')], [outage])).toMatchObject({ ok: false, exercised: false, not503: 1 });
  });

  test('no outage, nothing to judge', () => {
    expect(checkOutageAnswers([a(2000, 2050, '202')], []).ok).toBe(true);
  });
});
