import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { closeServer } from './close-server';
import { startHealthServer } from './health-server';

test('readyz answers 503 once draining, whatever the checks say', async () => {
  const { server, setDraining } = await startHealthServer(0, '127.0.0.1', async () => ({ postgres: true }));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/readyz`;
    expect((await fetch(url)).status).toBe(200);
    setDraining();
    const res = await fetch(url);
    expect([res.status, await res.json()]).toEqual([503, { status: 'not_ready', draining: true, checks: { postgres: true } }]);
  } finally {
    await closeServer(server, 100);
  }
});

test('a port in use fails the start with its reason (a boot error), not an uncaught error event', async () => {
  const taken = createServer();
  taken.listen(0, '127.0.0.1');
  await once(taken, 'listening');
  try {
    await expect(startHealthServer((taken.address() as AddressInfo).port, '127.0.0.1', async () => ({}))).rejects.toMatchObject({ code: 'EADDRINUSE' });
  } finally {
    taken.close();
  }
});
