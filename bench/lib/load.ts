// Two load generators, chosen by what each costs on this machine (the generator shares the
// two cores with the system under test): autocannon for saturation (measured ~15 µs of CPU
// per request against ~27 µs for an undici loop), and an undici Pool driven by a 1 ms
// clock for constant-rate runs (autocannon's overallRate sends each second's quota as a
// burst, which would measure queueing, not latency).
import autocannon from 'autocannon';
import { Pool } from 'undici';
import { Histogram, type LatencySummary } from './histogram';
import { PHASE_FIELD } from './receiver-tally';

export interface LoadResult {
  mode: 'saturation' | 'constant-rate';
  durationS: number;
  offeredPerS: number | null;
  sent: number;
  ok2xx: number;
  non2xx: number;
  errors: number;
  /** Requests not sent because too many were in flight (the server fell behind). */
  skipped: number;
  ok2xxPerS: number;
  ackLatencyMs: LatencySummary;
  generatorCpuMs: number;
}

export interface Target {
  url: string;
  body: string;
  headers?: Record<string, string>;
}

const JSON_HEADERS = { 'content-type': 'application/json' };

/** Closed loop: `connections` keep-alive connections, each sending as soon as answered. */
export async function saturate(t: Target, connections: number, durationMs: number, maxRequests: number | null = null): Promise<LoadResult> {
  const cpu0 = process.cpuUsage();
  const r = await autocannon({
    url: t.url,
    method: 'POST',
    body: t.body,
    headers: { ...JSON_HEADERS, ...t.headers },
    connections,
    duration: Math.max(1, Math.round(durationMs / 1000)),
    timeout: 30,
    // Ends the phase early once this many requests were sent: bounds the backlog it leaves.
    ...(maxRequests ? { maxOverallRequests: Math.max(maxRequests, connections) } : {}),
  });
  const cpu = process.cpuUsage(cpu0);
  return {
    mode: 'saturation',
    durationS: r.duration,
    offeredPerS: null,
    sent: r.requests.sent,
    ok2xx: r['2xx'],
    non2xx: r.non2xx,
    errors: r.errors,
    skipped: 0,
    ok2xxPerS: Math.round(r['2xx'] / r.duration),
    ackLatencyMs: { count: r['2xx'] + r.non2xx, p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max, mean: Math.round(r.latency.mean * 10) / 10 },
    generatorCpuMs: Math.round((cpu.user + cpu.system) / 1000),
  };
}

/** Open loop: `rate` requests a second on a 1 ms clock, at most `maxInFlight` outstanding. */
export async function constantRate(t: Target, rate: number, durationMs: number, connections = 64, maxInFlight = 2000): Promise<LoadResult> {
  const u = new URL(t.url);
  const pool = new Pool(u.origin, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const headers = { ...JSON_HEADERS, ...t.headers };
  const hist = new Histogram(60_000);
  let sent = 0, ok = 0, non2xx = 0, errors = 0, skipped = 0, inFlight = 0;
  const cpu0 = process.cpuUsage();
  const fire = (): void => {
    inFlight++;
    const t0 = performance.now();
    pool
      .request({ path: u.pathname + u.search, method: 'POST', body: t.body, headers })
      .then(async (res) => {
        await res.body.dump();
        hist.record(performance.now() - t0);
        if (res.statusCode >= 200 && res.statusCode < 300) ok++;
        else non2xx++;
      })
      .catch(() => errors++)
      .finally(() => inFlight--);
  };
  const start = performance.now();
  await new Promise<void>((done) => {
    const timer = setInterval(() => {
      const elapsed = performance.now() - start;
      const due = Math.floor((rate * Math.min(elapsed, durationMs)) / 1000);
      while (sent + skipped < due) {
        if (inFlight >= maxInFlight) skipped++;
        else {
          sent++;
          fire();
        }
      }
      if (elapsed >= durationMs) {
        clearInterval(timer);
        done();
      }
    }, 1);
  });
  const drainBy = Date.now() + 30_000;
  while (inFlight > 0 && Date.now() < drainBy) await new Promise((r) => setTimeout(r, 20));
  await pool.close().catch(() => undefined);
  const cpu = process.cpuUsage(cpu0);
  const seconds = durationMs / 1000;
  return {
    mode: 'constant-rate',
    durationS: seconds,
    offeredPerS: rate,
    sent,
    ok2xx: ok,
    non2xx,
    errors,
    skipped,
    ok2xxPerS: Math.round(ok / seconds),
    ackLatencyMs: hist.summary(),
    generatorCpuMs: Math.round((cpu.user + cpu.system) / 1000),
  };
}

/**
 * A JSON event body of about `bytes` bytes. `phase` comes first (`{"bench_phase":"<tag>",…`):
 * the receiver reads it from the first bytes of each delivery to count deliveries per phase.
 */
export function eventBody(bytes: number, phase?: string): string {
  const base = { ...(phase ? { [PHASE_FIELD]: phase } : {}), type: 'bench.event', data: { id: 1, note: '' } };
  const pad = Math.max(0, bytes - JSON.stringify(base).length);
  base.data.note = 'x'.repeat(pad);
  return JSON.stringify(base);
}

export interface GatedResult extends LoadResult {
  /** Deliveries counted at the receiver during the run, and per second after warm-up. */
  delivered: number;
  deliveredPerS: number;
  /** deliveredPerS is the mean over the last `windowS` seconds of the run, after `warmupS` of warm-up. */
  windowS: number;
  warmupS: number;
  maxLag: number;
}

/**
 * Closed loop on the whole pipeline: `connections` senders post as fast as ingest answers,
 * but pause while more than `maxLag` acknowledged deliveries have not reached the receiver.
 * What it measures is the rate the pipeline sustains end to end, with a bounded backlog.
 */
export async function gatedLoop(t: Target, connections: number, durationMs: number, fanout: number, maxLag: number, delivered: () => Promise<number>): Promise<GatedResult> {
  const u = new URL(t.url);
  const pool = new Pool(u.origin, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const headers = { ...JSON_HEADERS, ...t.headers };
  const hist = new Histogram(60_000);
  const base = await delivered();
  let seen = 0, sent = 0, ok = 0, non2xx = 0, errors = 0;
  const cpu0 = process.cpuUsage();
  const start = Date.now();
  const end = start + durationMs;
  const warmupEnd = start + Math.min(10_000, durationMs * 0.2);
  let warm: { t: number; n: number } | null = null;
  let polling = true;
  const poller = (async () => {
    while (polling) {
      seen = (await delivered().catch(() => base + seen)) - base;
      if (!warm && Date.now() >= warmupEnd) warm = { t: Date.now(), n: seen };
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  const sender = async (): Promise<void> => {
    while (Date.now() < end) {
      if (ok * fanout - seen > maxLag) {
        await new Promise((r) => setTimeout(r, 5));
        continue;
      }
      sent++;
      const t0 = performance.now();
      try {
        const res = await pool.request({ path: u.pathname + u.search, method: 'POST', body: t.body, headers, headersTimeout: 30_000 });
        await res.body.dump();
        hist.record(performance.now() - t0);
        if (res.statusCode >= 200 && res.statusCode < 300) ok++;
        else non2xx++;
      } catch {
        errors++;
        await new Promise((r) => setTimeout(r, 10));
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, sender));
  seen = (await delivered()) - base;
  const finished = { t: Date.now(), n: seen };
  polling = false;
  await poller;
  await pool.close().catch(() => undefined);
  const cpu = process.cpuUsage(cpu0);
  const w = warm ?? { t: start, n: 0 };
  const windowS = (finished.t - w.t) / 1000;
  return {
    mode: 'saturation',
    durationS: (finished.t - start) / 1000,
    offeredPerS: null,
    sent,
    ok2xx: ok,
    non2xx,
    errors,
    skipped: 0,
    ok2xxPerS: Math.round(ok / ((finished.t - start) / 1000)),
    ackLatencyMs: hist.summary(),
    generatorCpuMs: Math.round((cpu.user + cpu.system) / 1000),
    delivered: finished.n,
    deliveredPerS: windowS > 0 ? Math.round((finished.n - w.n) / windowS) : 0,
    windowS: Math.round(windowS * 10) / 10,
    warmupS: Math.round(((w.t - start) / 1000) * 10) / 10,
    maxLag,
  };
}
