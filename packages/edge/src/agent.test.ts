// The pull loop against an in-memory service: pacing, backoff and Retry-After, leases that
// run out, and stop (with the leases it gives back). Waits are recorded, not slept (the
// loop's `sleep` is injected).
import type { AttemptReport, LeaseRelease, ReleaseResponse, WorkItem, WorkResponse } from '@hookline/delivery/src/wire';
import { createLogger } from '@hookline/logger';
import { createEdgeAgent, MIN_POLL_INTERVAL_MS, stopReserveMs, type EdgeAgentDeps } from './agent';
import { createReleaser } from './releaser';
import type { Reporter } from './reporter';
import { ServiceError, type ServiceClient } from './service-client';
import type { TargetSender } from './target-sender';

jest.setTimeout(10_000);

const logger = createLogger('edge-test', 'error');
logger.silent = true;

type Answer = (n: number, payload: { max: number; wait_seconds: number }, signal?: AbortSignal) => Promise<WorkResponse>;

interface ReleaseCall {
  releases: LeaseRelease[];
  timeoutMs: number | undefined;
}

/**
 * A service that answers work requests with `answer`; its clock is this host's plus
 * `skewMs`. Release requests are recorded in `released` and answered with `release`.
 */
function service(
  answer: Answer,
  skewMs = 0,
  release: (r: ReleaseCall) => Promise<ReleaseResponse> = async (r) => ({ results: r.releases.map((x) => ({ delivery_id: x.delivery_id, result: 'released' as const })) }),
): ServiceClient & { asked: { max: number; wait_seconds: number }[]; released: ReleaseCall[] } {
  const asked: { max: number; wait_seconds: number }[] = [];
  const released: ReleaseCall[] = [];
  return {
    asked,
    released,
    post: async <T>(path: string, payload: object, opts?: { signal?: AbortSignal; timeoutMs?: number }) => {
      if (path.endsWith('/releases')) {
        const call = { releases: (payload as { releases: LeaseRelease[] }).releases, timeoutMs: opts?.timeoutMs };
        released.push(call);
        return (await release(call)) as T;
      }
      const p = payload as { max: number; wait_seconds: number };
      asked.push(p);
      await new Promise((r) => setImmediate(r)); // a network round trip yields to timers and I/O
      return (await answer(asked.length, p, opts?.signal)) as T;
    },
    now: () => Date.now() + skewMs,
    close: async () => undefined,
  };
}

/** Never answers; rejects when the request is abandoned. */
const hang = (signal?: AbortSignal): Promise<never> =>
  new Promise((_, reject) => {
    const abandon = (): void => reject(new ServiceError('aborted', null));
    if (signal?.aborted) abandon();
    else signal?.addEventListener('abort', abandon);
  });

const empty: WorkResponse = { deliveries: [], response_body_limit: 100 };

function item(id: string, leaseInMs: number, timeoutMs: number, now: number): WorkItem {
  return { id, lease_owner: `edge:t:${id}`, url: 'http://10.0.0.1/hook', method: 'POST', headers: {}, body_base64: '', timeout_ms: timeoutMs, lease_until: new Date(now + leaseInMs).toISOString() };
}

const report = (i: WorkItem): AttemptReport => ({ delivery_id: i.id, lease_owner: i.lease_owner, status_code: 200, response_body: 'ok', response_headers: {}, error_kind: null, error: null, started_at: new Date().toISOString(), duration_ms: 1 });

function sender(send: (i: WorkItem, stop?: AbortSignal) => Promise<AttemptReport | null> = async (i) => report(i)): TargetSender & { sent: WorkItem[] } {
  const sent: WorkItem[] = [];
  return { sent, send: (i, _limit, stop) => (sent.push(i), send(i, stop)), close: async () => undefined };
}

/** A target that answers only when `answer(id)` is called; a stop before that abandons the send (null), as the real sender does. */
function heldTarget(): TargetSender & { sent: WorkItem[]; answer(id: string): void } {
  const answers = new Map<string, () => void>();
  const s = sender(
    (i, stop) =>
      new Promise((resolve) => {
        answers.set(i.id, () => resolve(report(i)));
        stop?.addEventListener('abort', () => resolve(null), { once: true });
      }),
  );
  return Object.assign(s, { answer: (id: string) => answers.get(id)?.() });
}

const reporter = (): Reporter & { reports: AttemptReport[] } => {
  const reports: AttemptReport[] = [];
  return { reports, add: async (r) => void reports.push(r), drain: async () => undefined };
};

function agent(client: ServiceClient, over: Partial<EdgeAgentDeps> = {}) {
  const waits: number[] = [];
  const deps: EdgeAgentDeps = {
    client,
    sender: sender(),
    reporter: reporter(),
    releaser: createReleaser({ client, clusterId: 'cls_test', logger }),
    logger,
    clusterId: 'cls_test',
    maxInFlight: 4,
    waitSeconds: 25,
    backoff: { baseMs: 500, maxMs: 30_000 },
    sleep: async (ms) => void waits.push(ms),
    ...over,
  };
  return { agent: createEdgeAgent(deps), waits, deps };
}

const until = async (cond: () => boolean): Promise<void> => {
  while (!cond()) await new Promise((r) => setImmediate(r));
};

test('a service that answers empty at once is not polled in a loop: each empty answer is followed by the rest of the minimum interval', async () => {
  const svc = service(async (n, _p, signal) => (n <= 6 ? empty : hang(signal)));
  const { agent: a, waits } = agent(svc);
  a.start();
  await until(() => svc.asked.length === 7);
  await a.stop(100);
  // The first request is the heartbeat (max 0, no wait); the five long-polls after it came back empty at once.
  expect(svc.asked[0]).toMatchObject({ max: 0, wait_seconds: 0 });
  expect(svc.asked.slice(1).every((p) => p.max === 4 && p.wait_seconds === 25)).toBe(true);
  expect(waits).toHaveLength(5);
  for (const w of waits) expect(w).toBeGreaterThan(MIN_POLL_INTERVAL_MS / 2);
});

test("429 and 5xx back off with jitter, growing to the cap, and the service's Retry-After wins when longer", async () => {
  const failures: ServiceError[] = [
    new ServiceError('service answered 429: slow down', 429, 120_000),
    new ServiceError('service answered 503', 503),
    new ServiceError('service unreachable: connect ECONNREFUSED', null),
    ...Array.from({ length: 8 }, () => new ServiceError('service answered 500', 500)),
  ];
  const svc = service(async (n, _p, signal) => {
    const f = failures[n - 1];
    if (f) throw f;
    return hang(signal);
  });
  const { agent: a, waits } = agent(svc, { backoff: { baseMs: 500, maxMs: 8_000 } });
  a.start();
  await until(() => svc.asked.length === failures.length + 1);
  await a.stop(100);
  expect(waits).toHaveLength(failures.length);
  expect(waits[0]).toBe(120_000);
  // Then the backoff of the 2nd, 3rd… failure in a row: d = 500·2^(n-1) capped at 8 s, jittered in [d/2, d].
  waits.slice(1).forEach((w, i) => {
    const d = Math.min(8_000, 500 * 2 ** (i + 1));
    expect(w).toBeGreaterThanOrEqual(d / 2);
    expect(w).toBeLessThanOrEqual(d);
  });
});

test("leases are read on the service's clock: an expired one is not sent, one ending before the timeout cuts the timeout to it", async () => {
  // This host's clock is 10 minutes behind the service's: by it, every lease looks long.
  const skewMs = 10 * 60_000;
  const now = Date.now() + skewMs;
  const expired = item('dlv_expired', -1_000, 10_000, now);
  const short = item('dlv_short', 5_000, 30_000, now);
  const long = item('dlv_long', 60_000, 10_000, now);
  const svc = service(async (n, _p, signal) => (n === 2 ? { deliveries: [expired, short, long], response_body_limit: 100 } : n === 1 ? empty : hang(signal)), skewMs);
  const s = sender();
  const r = reporter();
  const { agent: a } = agent(svc, { sender: s, reporter: r });
  a.start();
  await until(() => r.reports.length >= 2 && a.inFlight() === 0);
  await a.stop(100);
  expect(s.sent.map((i) => i.id).sort()).toEqual(['dlv_long', 'dlv_short']);
  const sentShort = s.sent.find((i) => i.id === 'dlv_short')!;
  expect(sentShort.timeout_ms).toBeLessThan(5_000);
  expect(sentShort.timeout_ms).toBeGreaterThan(3_000);
  expect(s.sent.find((i) => i.id === 'dlv_long')!.timeout_ms).toBe(10_000);
});

test('stop while full does not wait for the long-poll wait: it gives the in-flight delivery its deadline, then returns', async () => {
  let finish: () => void = () => undefined;
  const slow = sender((i) => new Promise((res) => (finish = () => res(report(i)))));
  const svc = service(async (n, _p, signal) => (n === 1 ? empty : n === 2 ? { deliveries: [item('dlv_slow', 60_000, 30_000, Date.now())], response_body_limit: 100 } : hang(signal)));
  // Full after one delivery, with a 2-minute wait before the heartbeat.
  const { agent: a } = agent(svc, { sender: slow, maxInFlight: 1, waitSeconds: 120 });
  a.start();
  await until(() => slow.sent.length === 1);
  await a.stop(50);
  expect(a.inFlight()).toBe(1);
  expect(svc.asked).toHaveLength(2);
  finish();
});

describe('stop gives back the leases of work it did not send', () => {
  test('sends still without an answer near the deadline are abandoned and released in one request; a completed one is reported, never released', async () => {
    const now = Date.now();
    const items = [item('dlv_done', 60_000, 30_000, now), item('dlv_hung_a', 60_000, 30_000, now), item('dlv_hung_b', 60_000, 30_000, now)];
    const svc = service(async (n, _p, signal) => (n === 1 ? empty : n === 2 ? { deliveries: items, response_body_limit: 100 } : hang(signal)));
    const target = heldTarget();
    const r = reporter();
    const { agent: a } = agent(svc, { sender: target, reporter: r });
    a.start();
    await until(() => target.sent.length === 3);
    target.answer('dlv_done');
    await until(() => r.reports.length === 1);
    await a.stop(4_000);
    expect(r.reports.map((x) => x.delivery_id)).toEqual(['dlv_done']);
    expect(svc.released).toHaveLength(1);
    expect(svc.released[0]!.releases).toEqual([
      { delivery_id: 'dlv_hung_a', lease_owner: 'edge:t:dlv_hung_a' },
      { delivery_id: 'dlv_hung_b', lease_owner: 'edge:t:dlv_hung_b' },
    ]);
    // Within the stop's reserve, not past its deadline.
    expect(svc.released[0]!.timeoutMs).toBeGreaterThan(0);
    expect(svc.released[0]!.timeoutMs).toBeLessThanOrEqual(stopReserveMs(4_000));
    expect(a.inFlight()).toBe(0);
  });

  test('work that arrives after the stop began is not sent: its leases go back', async () => {
    const now = Date.now();
    let deliver: ((w: WorkResponse) => void) | null = null;
    // The second poll's answer ignores the abandonment: it arrives once the stop has begun.
    const svc = service(async (n, _p, signal) => (n === 1 ? empty : n === 2 ? new Promise<WorkResponse>((res) => (deliver = res)) : hang(signal)));
    const s = sender();
    const r = reporter();
    const { agent: a } = agent(svc, { sender: s, reporter: r });
    a.start();
    await until(() => deliver !== null);
    const stopped = a.stop(2_000);
    deliver!({ deliveries: [item('dlv_late', 60_000, 30_000, now)], response_body_limit: 100 });
    await stopped;
    expect(s.sent).toEqual([]);
    expect(r.reports).toEqual([]);
    expect(svc.released.map((c) => c.releases)).toEqual([[{ delivery_id: 'dlv_late', lease_owner: 'edge:t:dlv_late' }]]);
    expect(svc.asked).toHaveLength(2);
    expect(a.inFlight()).toBe(0);
  });

  test('a release the service refuses is logged and left to expire: stop still returns by its deadline', async () => {
    const now = Date.now();
    const svc = service(
      async (n, _p, signal) => (n === 1 ? empty : n === 2 ? { deliveries: [item('dlv_hung', 60_000, 30_000, now)], response_body_limit: 100 } : hang(signal)),
      0,
      async () => {
        throw new ServiceError('service answered 503', 503);
      },
    );
    const target = heldTarget();
    const quiet = createLogger('edge-test', 'warn');
    quiet.silent = true;
    const warn = jest.spyOn(quiet, 'warn');
    const { agent: a } = agent(svc, { sender: target, releaser: createReleaser({ client: svc, clusterId: 'cls_test', logger: quiet }) });
    a.start();
    await until(() => target.sent.length === 1);
    await a.stop(2_000);
    expect(svc.released).toHaveLength(1);
    expect(warn).toHaveBeenCalledWith('could not give leases back; they will expire', expect.objectContaining({ delivery_ids: ['dlv_hung'] }));
  });
});
