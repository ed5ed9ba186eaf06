// The SSRF refusal path, exercised with loopback targets only: a deliverer without an
// allowlist must not reach a receiver on 127.0.0.1, whatever the URL spelling.
import { startReceiver, type Receiver } from '@hookline/testing';
import { createHarness, type Harness } from './deliverer-fixtures';

jest.setTimeout(30_000);

let h: Harness;
let rx: Receiver;

beforeAll(async () => {
  h = await createHarness('dlvssrf', { SSRF_ALLOWLIST: '' });
  rx = await startReceiver();
});

afterAll(async () => {
  await rx?.close();
  await h?.close();
});

test('loopback destinations are refused (ssrf_blocked, not retried) and the receiver gets nothing', async () => {
  const urls = [
    rx.url,
    `http://localhost:${rx.port}/`, // a name: refused by the connect-time lookup
    `http://[::1]:${rx.port}/`,
    `http://2130706433:${rx.port}/`,
    `http://0x7f.1:${rx.port}/`,
    `http://[::ffff:127.0.0.1]:${rx.port}/`,
  ];
  const ds = [];
  for (const url of urls) ds.push(await h.delivery((await h.destination(url)).id));
  expect(await h.run(ds.map((d) => d.deliveryId))).toMatchObject({ claimed: urls.length, exhausted: urls.length });
  for (const d of ds) {
    const attempts = await h.attempts(d.deliveryId);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ error_kind: 'ssrf_blocked', status_code: null });
    expect(attempts[0]!.error).toMatch(/SSRF protection \((loopback|not_an_ip)\)/);
    expect((await h.row(d.deliveryId)).status).toBe('exhausted');
  }
  expect(rx.requests).toHaveLength(0);
});

test('the same destination is reached once its range is allowlisted', async () => {
  const allowed = h.replica({ SSRF_ALLOWLIST: '127.0.0.0/8,::1/128' });
  const d = await h.delivery((await h.destination(`http://localhost:${rx.port}/ok`)).id);
  expect(await h.run([d.deliveryId], allowed.deps)).toMatchObject({ delivered: 1 });
  expect(rx.requests.map((r) => r.url)).toEqual(['/ok']);
});
