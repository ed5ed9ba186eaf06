// A destination whose stored config.headers hold values undici cannot send (a control
// character, DEL, a character beyond U+00FF: written before the API refused them). Sent,
// each attempt threw before anything left and was recorded as a `connect` failure of the
// receiver: counted against its circuit, retried to the DLQ. Such headers are left out of
// the request instead (as reserved or malformed ones always were), with a warning once per
// destination. Real PostgreSQL and Redis, a receiver on loopback.
import { destinationHealthKey } from '@hookline/queues';
import { startReceiver, type Receiver } from '@hookline/testing';
import { createHarness, type Harness } from './deliverer-fixtures';

jest.setTimeout(60_000);

let h: Harness;
let rx: Receiver;

beforeAll(async () => {
  h = await createHarness('dlvhdrval');
  rx = await startReceiver();
});

afterAll(async () => {
  await rx?.close();
  await h?.close();
});

test('values that cannot be sent are left out of the request (not failed against the receiver), the others sent, and it is said once', async () => {
  const headers = { 'X-A': 'ctl\u0001', 'x-b': 'euro €', 'x-c': 'del\u007f', 'x-d': 'tab\tok', 'x-e': 'café', Authorization: 'Bearer t' };
  const dst = await h.destination(`${rx.url}/in`, { config: { headers } });
  const first = await h.delivery(dst.id);
  const second = await h.delivery(dst.id);
  const warnings: [string, Record<string, unknown> | undefined][] = [];
  const logger = Object.create(h.deps.logger) as typeof h.deps.logger;
  logger.warn = ((msg: string, fields?: Record<string, unknown>) => (warnings.push([msg, fields]), logger)) as typeof logger.warn;
  const deps = { ...h.deps, logger };

  expect(await h.run([first.deliveryId], deps)).toMatchObject({ claimed: 1, delivered: 1, failed: 0 });
  expect(await h.run([second.deliveryId], deps)).toMatchObject({ claimed: 1, delivered: 1, failed: 0 });

  expect(rx.requests).toHaveLength(2);
  for (const got of rx.requests) {
    // 'é' is U+00E9: one byte on the wire, read back as latin1.
    expect(got.headers).toMatchObject({ 'x-d': 'tab\tok', 'x-e': 'café', authorization: 'Bearer t' });
    for (const name of ['x-a', 'x-b', 'x-c']) expect(got.headers).not.toHaveProperty(name);
  }
  for (const d of [first, second]) {
    expect(await h.attempts(d.deliveryId)).toEqual([expect.objectContaining({ number: 1, status_code: 200, error_kind: null })]);
  }
  // Nothing was counted against the destination.
  expect(await h.redis.hmget(destinationHealthKey(h.prefix, dst.id), 'state', 'failures', 'last_error')).toEqual(['closed', '0', null]);
  expect(warnings).toEqual([[expect.stringContaining('cannot be sent'), { destination_id: dst.id, header_names: ['x-a', 'x-b', 'x-c'] }]]);
});
