// The pull loop against an in-memory service: pacing, backoff and Retry-After, leases that
// run out, and stop. Waits are recorded, not slept (the loop's `sleep` is injected).
import type { AttemptReport, WorkItem, WorkResponse } from '@hookline/delivery/src/wire';
import { createLogger } from '@hookline/logger';
import { createEdgeAgent, MIN_POLL_INTERVAL_MS, type EdgeAgentDeps } from './agent';
import type { Reporter } from './reporter';
import { ServiceError, type ServiceClient } from './service-client';
import type { TargetSender } from './target-sender';

jest.setTimeout(10_000);

const logger = createLogger('edge-test', 'error');
logger.silent = true;

type Answer = (n: number, payload: { max: number; wait_seconds: number }, signal?: AbortSignal) => Promise<WorkResponse>;

/** A service that answers work requests with `answer`; its clock is this host's plus `skewMs`. */
function service(answer: Answer, skewMs = 0): ServiceClient & { asked: { max: number; wait_seconds: number }[] } {
  const asked: { max: number; wait_seconds: number }[] = [];
  return {
    asked,
    post: async <T>(_path: string, payload: object, opts?: { signal?: AbortSignal }) => {
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

function sender(send: (i: WorkItem) => Promise<AttemptReport> = async (i) => report(i)): TargetSender & { sent: WorkItem[] } {
  const sent: WorkItem[] = [];
  return { sent, send: (i) => (sent.push(i), send(i)), close: async () => undefined };
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
