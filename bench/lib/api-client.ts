// The few control-API calls the harnesses make to configure a run, with the tenant's key.
import { seedTenant, type SeededTenant } from '@hookline/testing';
import type { Pool } from '@hookline/db';

export interface HookSetup {
  ingesterId: string;
  hookUrl: string;
  destinationIds: string[];
}

export class ApiClient {
  constructor(readonly baseUrl: string, readonly tenant: SeededTenant) {}

  static async forNewTenant(baseUrl: string, pool: Pool): Promise<ApiClient> {
    return new ApiClient(baseUrl, await seedTenant(pool, { plan: 'enterprise', name: 'bench' }));
  }

  async call<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    const res = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: { 'x-api-key': this.tenant.apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
  }

  private async create<T>(path: string, body: unknown): Promise<T> {
    const r = await this.call<T>('POST', `/v1/tenants/${this.tenant.tenantId}/${path}`, body);
    if (r.status !== 201) throw new Error(`POST ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  }

  /** One generic ingester with one flow to each destination URL (fan-out = urls.length). */
  async hook(name: string, urls: string[], destinationConfig: Record<string, unknown> = {}): Promise<HookSetup> {
    const ing = await this.create<{ id: string; hook_url: string }>('ingesters', { name, provider: 'generic' });
    const destinationIds: string[] = [];
    for (const [i, url] of urls.entries()) {
      const dst = await this.create<{ id: string }>('destinations', { name: `${name}-dst-${i + 1}`, url, config: destinationConfig });
      await this.create('delivery-flows', { name: `${name}-flow-${i + 1}`, endpoint: ing.id, target: dst.id });
      destinationIds.push(dst.id);
    }
    return { ingesterId: ing.id, hookUrl: ing.hook_url, destinationIds };
  }
}
