import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * A loopback port that nothing listens on now, for a process started next to bind.
 *
 * Ports come from outside the kernel's ephemeral range, so a server that listens on
 * port 0 (test receivers, proxies) can never be handed a port that a service is
 * about to bind, or one a stopped service will be restarted on: that race sent one
 * test file's readiness probes to another file's receiver. Each jest worker (and
 * the processes it spawns, which inherit JEST_WORKER_ID) draws from its own slice,
 * so concurrent test files do not pick the same port either.
 */
export async function freePort(): Promise<number> {
  const range = pickRange();
  if (!range) return listenOn(0);
  for (let tries = 0; tries < range.size; tries += 1) {
    const port = range.start + (cursor++ % range.size);
    const bound = await listenOn(port).catch(() => null);
    if (bound !== null) return bound;
  }
  return listenOn(0);
}

const SLICES = 8;
let cursor = Math.floor(Math.random() * 1_000_000);

interface PortRange {
  start: number;
  size: number;
}

/**
 * This worker's slice of the ports outside the kernel's ephemeral range: [10000, its low
 * end) when that has room, else (its high end, 65535]; null when neither has (then ports
 * come from the kernel, and the race this avoids is back).
 */
export function pickRange(ephemeral = ephemeralRange(), worker = Number(process.env.JEST_WORKER_ID ?? 0)): PortRange | null {
  const slice = (Number.isInteger(worker) && worker > 0 ? worker : 0) % SLICES;
  for (const [floor, top] of [[10_000, ephemeral.low], [ephemeral.high + 1, 65_536]] as const) {
    const size = Math.floor((top - floor) / SLICES);
    if (size >= 100) return { start: floor + slice * size, size };
  }
  return null;
}

function ephemeralRange(): { low: number; high: number } {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) return { low: low!, high: high! };
  } catch {
    // not Linux: the kernel's default range elsewhere starts at 49152
  }
  return { low: 49_152, high: 65_535 };
}

function listenOn(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(port, '127.0.0.1', () => {
      const addr = srv.address();
      const bound = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(bound));
    });
  });
}
