// After the load: wait until nothing is left to do (no event waiting for routing, no
// delivery pending, in flight or waiting for a retry) and the receivers went quiet.
import type { Pool } from '@hookline/db';

export interface Quiescence {
  quiescent: boolean;
  waitedMs: number;
  openEvents: number;
  openDeliveries: number;
}

async function openWork(pool: Pool): Promise<{ events: number; deliveries: number }> {
  const r = await pool.query<{ events: string; deliveries: string }>(
    `SELECT (SELECT count(*) FROM events WHERE status IN ('received', 'validated')) AS events,
            (SELECT count(*) FROM deliveries WHERE status IN ('pending', 'delivering', 'failed', 'replaying')) AS deliveries`,
  );
  return { events: Number(r.rows[0]?.events ?? 0), deliveries: Number(r.rows[0]?.deliveries ?? 0) };
}

export async function waitQuiescent(pool: Pool, receiverRequests: () => Promise<number>, timeoutMs: number, log: (m: string) => void): Promise<Quiescence> {
  const t0 = Date.now();
  let stableSince = 0;
  let lastRequests = -1;
  let lastLog = t0;
  let open = { events: -1, deliveries: -1 };
  while (Date.now() - t0 < timeoutMs) {
    open = await openWork(pool).catch(() => ({ events: -1, deliveries: -1 }));
    const req = await receiverRequests();
    const idle = open.events === 0 && open.deliveries === 0 && req === lastRequests;
    if (idle && !stableSince) stableSince = Date.now();
    if (!idle) stableSince = 0;
    if (stableSince && Date.now() - stableSince >= 3000) return { quiescent: true, waitedMs: Date.now() - t0, openEvents: 0, openDeliveries: 0 };
    if (Date.now() - lastLog >= 5000) {
      lastLog = Date.now();
      log(`  settling: ${open.events} events to route, ${open.deliveries} deliveries open, receivers saw ${req} requests`);
    }
    lastRequests = req;
    await new Promise((r) => setTimeout(r, 1000));
  }
  return { quiescent: false, waitedMs: Date.now() - t0, openEvents: open.events, openDeliveries: open.deliveries };
}
