// The edge path of a destination whose stored config.headers hold values undici cannot
// send (written before the API refused them): as in the deliverer, they are left out of the
// work item the service prepares, which the agent's own sender then sends; before, the
// agent's undici threw on every attempt, reported as a `connect` failure of the receiver.
// The api's edge code in-process, real PostgreSQL and Redis, the agent's sender on loopback.
import { newLeaseOwner } from '@hookline/delivery';
import { startReceiver, type Receiver } from '@hookline/testing';
import { createTargetGuard } from '../packages/edge/src/target-guard';
import { parseTargetPolicy } from '../packages/edge/src/target-policy';
import { createTargetSender } from '../packages/edge/src/target-sender';
import type { EdgeDeps } from '../services/api/src/edge/edge-deps';
import { leaseWork } from '../services/api/src/edge/lease-work';
import { startApi, type ApiHarness } from './api-harness';
import { attemptsOf, deliveryRow, gateEdgeDeps, insertCluster, insertEdgeDelivery } from './edge-fixtures';

jest.setTimeout(30_000);

let h: ApiHarness;
let rx: Receiver;
let tenantId: string;

beforeAll(async () => {
  h = await startApi('edgehdrval');
  tenantId = (await h.tenant()).tenantId;
  rx = await startReceiver();
});

afterAll(async () => {
  await rx?.close();
  await h?.close();
});

it('values that cannot be sent are left out of the work item, said once; the agent sends the rest', async () => {
  const warnings: [string, Record<string, unknown> | undefined][] = [];
  const quiet = (): void => undefined;
  const logger = { warn: (msg: string, fields?: Record<string, unknown>) => void warnings.push([msg, fields]), info: quiet, debug: quiet, error: quiet, child: () => logger };
  const deps: EdgeDeps = { ...gateEdgeDeps(h, h.redis, 'edge-unsendable-headers-test'), logger: logger as unknown as EdgeDeps['logger'] };
  const cluster = await insertCluster(h.db.pool, tenantId);
  const c = { id: cluster.id, tenantId, signedWith: cluster.sealed };
  const config = { headers: { 'X-A': 'ctl\u0001', 'x-b': 'euro €', 'x-c': 'del\u007f', 'x-d': 'tab\tok', Authorization: 'Bearer t' } };
  const first = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id, { url: `${rx.url}/in`, config, secret: 'whsec_' + Buffer.from('an edge secret of 24+ bytes!').toString('base64') });
  const second = await insertEdgeDelivery(h.db.pool, tenantId, cluster.id, { destinationId: first.destinationId });

  const leased = await leaseWork(deps, c, { leaseOwner: newLeaseOwner('edge:agent-a'), max: 10 });
  expect(leased.deliveries.map((d) => d.id).sort()).toEqual([first.deliveryId, second.deliveryId].sort());
  for (const item of leased.deliveries) {
    expect(item.headers).toMatchObject({ 'x-d': 'tab\tok', authorization: 'Bearer t', 'webhook-signature': expect.stringMatching(/^v1,/) });
    for (const name of ['x-a', 'X-A', 'x-b', 'x-c']) expect(item.headers).not.toHaveProperty(name);
  }
  // Handed out, not refused: no attempt recorded at lease time.
  for (const d of [first, second]) {
    expect(await attemptsOf(h.db.pool, d.deliveryId)).toEqual([]);
    expect(await deliveryRow(h.db.pool, d.deliveryId)).toMatchObject({ status: 'delivering', attempt_count: 0 });
  }
  expect(warnings).toEqual([[expect.stringContaining('cannot be sent'), { destination_id: first.destinationId, header_names: ['x-a', 'x-b', 'x-c'] }]]);

  // The agent's own sender (undici) sends each item as prepared.
  const guard = createTargetGuard(parseTargetPolicy('127.0.0.1/32', true).policy);
  const sender = createTargetSender({ guard });
  try {
    for (const item of leased.deliveries) expect(await sender.send(item, 1000)).toMatchObject({ status_code: 200, error_kind: null });
  } finally {
    await sender.close();
  }
  expect(rx.requests.map((r) => r.headers['x-d'])).toEqual(['tab\tok', 'tab\tok']);
});
