// The chaos run's provider: N events at a steady rate, round-robin over the hooks, each
// retried with the same Idempotency-Key on a non-2xx answer or a connection error (as
// providers do) until acknowledged or its deadline passes. Every attempt is logged (start,
// end, answer), so that the verdict can judge ingest's answers while PostgreSQL was down.
import { Pool } from 'undici';

export interface Ack {
  seq: number;
  hook: number;
  eventId: string;
  attempts: number;
}

/** A PostgreSQL outage: epoch ms from the server's exit to just before its restart. */
export interface Outage {
  from: number;
  to: number;
}

/** One request to ingest: epoch ms it was sent and answered (or failed), and the answer. */
export interface LoadAttempt {
  seq: number;
  /** 1 for the event's first request. */
  n: number;
  start: number;
  end: number;
  /** The status code ("202", "503"), or "error:CODE" for a request that got no answer. */
  status: string;
}

export interface ChaosLoadResult {
  acked: Map<number, Ack>;
  /** Events given up on: no 2xx within the per-event deadline. */
  unacked: number[];
  statuses: Record<string, number>;
  attempts: number;
  attemptLog: LoadAttempt[];
  sendSeconds: number;
}

export interface ChaosLoadOptions {
  hookUrls: string[];
  events: number;
  rate: number;
  runId: string;
  /** Give up on one event after this long (it is then reported as not acknowledged). */
  perEventDeadlineMs: number;
  /** Every 5 s: events started, acknowledged, and the answers so far by status or error code. */
  onProgress?: (sent: number, acked: number, statuses: Readonly<Record<string, number>>) => void;
}

function readEventId(text: string): string {
  try {
    return String((JSON.parse(text) as { event_id?: string }).event_id ?? '');
  } catch {
    return '';
  }
}

export function chaosBody(seq: number, runId: string): string {
  return JSON.stringify({ type: 'chaos.event', seq, run: runId, data: { note: 'x'.repeat(200) } });
}

export async function runChaosLoad(o: ChaosLoadOptions): Promise<ChaosLoadResult> {
  const origin = new URL(o.hookUrls[0]!).origin;
  const pool = new Pool(origin, { connections: 32, pipelining: 1, keepAliveTimeout: 10_000, connect: { timeout: 2000 } });
  const acked = new Map<number, Ack>();
  const unacked: number[] = [];
  const statuses: Record<string, number> = {};
  const attemptLog: LoadAttempt[] = [];
  let attempts = 0;
  const bump = (k: string): void => void (statuses[k] = (statuses[k] ?? 0) + 1);

  const sendOne = async (seq: number): Promise<void> => {
    const hook = seq % o.hookUrls.length;
    const url = new URL(o.hookUrls[hook]!);
    const body = chaosBody(seq, o.runId);
    const deadline = Date.now() + o.perEventDeadlineMs;
    for (let n = 1; ; n++) {
      attempts++;
      const start = Date.now();
      let status: string;
      let eventId: string | null = null;
      try {
        const res = await pool.request({ path: url.pathname, method: 'POST', body, headers: { 'content-type': 'application/json', 'idempotency-key': `${o.runId}-${seq}` }, headersTimeout: 10_000, bodyTimeout: 10_000 });
        const text = await res.body.text();
        status = String(res.statusCode);
        // A 2xx is an acknowledgement whatever its body; one without a readable event_id is
        // kept with '' and shows up as missing in the database.
        if (res.statusCode >= 200 && res.statusCode < 300) eventId = readEventId(text);
      } catch (err) {
        status = `error:${(err as { code?: string }).code ?? 'unknown'}`;
      }
      attemptLog.push({ seq, n, start, end: Date.now(), status });
      bump(status);
      if (eventId !== null) {
        acked.set(seq, { seq, hook, eventId, attempts: n });
        return;
      }
      if (Date.now() > deadline) {
        unacked.push(seq);
        return;
      }
      await new Promise((r) => setTimeout(r, Math.min(2000, 100 * 2 ** Math.min(n, 5)) * (0.5 + Math.random())));
    }
  };

  const start = Date.now();
  const pending = new Set<Promise<void>>();
  let sent = 0;
  let lastProgress = start;
  while (sent < o.events) {
    const due = Math.min(o.events, Math.floor(((Date.now() - start) * o.rate) / 1000) + 1);
    while (sent < due) {
      const p = sendOne(sent++).finally(() => pending.delete(p));
      pending.add(p);
    }
    if (o.onProgress && Date.now() - lastProgress >= 5000) {
      lastProgress = Date.now();
      o.onProgress(sent, acked.size, statuses);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  const sendSeconds = (Date.now() - start) / 1000;
  while (pending.size) {
    await Promise.race([Promise.all(pending), new Promise((r) => setTimeout(r, 5000))]);
    o.onProgress?.(sent, acked.size, statuses);
  }
  await pool.close().catch(() => undefined);
  return { acked, unacked, statuses, attempts, attemptLog, sendSeconds };
}
