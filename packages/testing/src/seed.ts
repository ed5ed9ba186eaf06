import type { Pool } from '@hookline/db';
import { newId } from '@hookline/db';
import { API_SCOPES, newApiKey, type Scope } from '@hookline/signing';

export interface SeededTenant {
  tenantId: string;
  apiKey: string;
  apiKeyId: string;
}

/** Inserts a tenant and an API key (all API scopes unless given) straight into the database. */
export async function seedTenant(pool: Pool, opts: { plan?: 'free' | 'pro' | 'business' | 'enterprise'; scopes?: Scope[]; name?: string; id?: string } = {}): Promise<SeededTenant> {
  const tenantId = opts.id ?? newId('ten');
  await pool.query(`INSERT INTO tenants (id, name, plan, updated_at) VALUES ($1, $2, $3, now())`, [tenantId, opts.name ?? 'Test tenant', opts.plan ?? 'free']);
  const k = newApiKey();
  const apiKeyId = newId('key');
  await pool.query(`INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash, scopes) VALUES ($1, $2, 'test', $3, $4, $5)`, [apiKeyId, tenantId, k.prefix, k.hash, opts.scopes ?? [...API_SCOPES]]);
  return { tenantId, apiKey: k.key, apiKeyId };
}
