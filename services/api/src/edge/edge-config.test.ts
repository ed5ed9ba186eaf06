// The edge variables are bounded so that an edge attempt's started_at stays within the hour
// its id may be off by in list windows and 24 h counts (ID_WINDOW_SLACK_MS): with every bound
// at its largest, the started_at a report may name still lies inside it.
import { deliveryPolicy } from '@hookline/delivery';
import { ID_WINDOW_SLACK_MS } from '../http/id-window';
import { loadEdgeConfig } from './edge-config';
import { startedAtWindow } from './report-times';

it('refuses edge leases, tolerances and default timeouts beyond their bounds', () => {
  expect(() => loadEdgeConfig({ EDGE_LEASE_MS: '600001' })).toThrow(/EDGE_LEASE_MS/);
  expect(() => loadEdgeConfig({ EDGE_SIGNATURE_TOLERANCE_SECONDS: '901' })).toThrow(/EDGE_SIGNATURE_TOLERANCE_SECONDS/);
  expect(() => loadEdgeConfig({ DELIVERY_TIMEOUT_MS: '300001' })).toThrow(/DELIVERY_TIMEOUT_MS/);
});

it('at the largest values allowed, a report\'s started_at lies within the id window slack', () => {
  const config = loadEdgeConfig({ EDGE_LEASE_MS: '600000', EDGE_SIGNATURE_TOLERANCE_SECONDS: '900', DELIVERY_TIMEOUT_MS: '300000' });
  const now = Date.UTC(2026, 10, 22);
  const w = startedAtWindow({ config, policy: deliveryPolicy(config) }, now);
  expect(now - w.earliest).toBeLessThan(ID_WINDOW_SLACK_MS);
  expect(w.latest - now).toBeLessThan(ID_WINDOW_SLACK_MS);
});
