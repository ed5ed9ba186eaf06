import type { ApiHarness, ApiTenant } from '../api-harness';

/**
 * Every view of one destination: the answer that made it, its GET, its entry in the tenant's
 * list and in the flat /v1/targets list (what must hide a secret must hide it in each).
 */
export async function destinationViews(h: ApiHarness, t: ApiTenant, id: string, made: unknown): Promise<any[]> {
  return [
    made,
    (await h.call('GET', `/v1/tenants/${t.tenantId}/destinations/${id}`, { key: t.apiKey })).body,
    (await h.call('GET', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey })).body.destinations.find((d: { id: string }) => d.id === id),
    (await h.call('GET', '/v1/targets', { key: t.apiKey })).body.targets.find((d: { id: string }) => d.id === id),
  ];
}
