import { createServer, type Server } from 'node:net';
import { readFileSync } from 'node:fs';
import { freePort, pickRange } from './free-port';

const ephemeralLow = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);

function hold(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(port, '127.0.0.1', () => resolve(srv));
  });
}

test('ports come from below the ephemeral range, so a listen(0) server can never be handed one', async () => {
  const held: Server[] = [];
  try {
    for (let i = 0; i < 20; i += 1) {
      const port = await freePort();
      expect(port).toBeGreaterThanOrEqual(10_000);
      expect(port).toBeLessThan(ephemeralLow);
      held.push(await hold(port)); // free when returned, and held here so the next pick must differ
    }
    const ephemeral = await hold(0);
    held.push(ephemeral);
    const addr = ephemeral.address();
    expect(typeof addr === 'object' && addr ? addr.port : 0).toBeGreaterThanOrEqual(ephemeralLow);
  } finally {
    await Promise.all(held.map((s) => new Promise((r) => s.close(r))));
  }
});

test('each jest worker draws from its own slice of the span', () => {
  const slices = [1, 2, 3, 4, 5, 6, 7, 8].map((w) => pickRange({ low: 32768, high: 60999 }, w)!);
  for (const s of slices) {
    expect(s.start).toBeGreaterThanOrEqual(10_000);
    expect(s.start + s.size).toBeLessThanOrEqual(32768);
  }
  const sorted = [...slices].sort((a, b) => a.start - b.start);
  for (let i = 1; i < sorted.length; i += 1) expect(sorted[i]!.start).toBeGreaterThanOrEqual(sorted[i - 1]!.start + sorted[i - 1]!.size);
  expect(pickRange({ low: 32768, high: 60999 }, 0)).toEqual(pickRange({ low: 32768, high: 60999 }, 8));
});

test('with no room below the ephemeral range it slices the ports above it, else falls back to the kernel', () => {
  const above = pickRange({ low: 1024, high: 60999 }, 3)!;
  expect(above.start).toBeGreaterThan(60999);
  expect(above.start + above.size).toBeLessThanOrEqual(65536);
  expect(pickRange({ low: 1024, high: 65535 }, 1)).toBeNull();
});
