import { AppError, type FieldError } from '@hookline/errors';
import { newId } from '@hookline/db';
import type { Ingester } from '../lib/models';
import type { AppContext } from '../context';
import type { PlanName } from '../config';
import { asObject, iso } from '../lib/format';
import { announce, duplicateName, lockNames, requirePlan } from '../lib/config-writes';
import type { IngesterBody } from './ingester.schema';

export interface TenantRef {
  id: string;
  plan: PlanName;
}

export function ingesterToView(app: AppContext, row: Ingester): Record<string, unknown> {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    cluster_id: row.clusterId,
    name: row.name,
    provider: row.provider,
    state: row.state,
    hook_url: `${app.config.INGEST_PUBLIC_URL.replace(/\/$/, '')}/in/${row.id}`,
    config: { ...asObject(row.config), signing_secret_set: row.secrets.length > 0, secrets_count: row.secrets.length },
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
  };
}

/** Splits a body's config into stored settings and secrets; checks the plan gates. */
function prepare(tenant: TenantRef, body: IngesterBody): { provider: string; config: Record<string, unknown>; secrets: string[] | null } {
  const errors: FieldError[] = [];
  if (!body.provider && !body.type) errors.push({ field: 'provider', message: 'is required' });
  if (body.provider && body.type && body.provider !== body.type) errors.push({ field: 'type', message: 'must equal provider when both are given' });
  const { signing_secret, signing_secrets, ...config } = body.config ?? {};
  if (signing_secret !== undefined && signing_secrets !== undefined) errors.push({ field: 'config.signing_secrets', message: 'cannot be combined with config.signing_secret' });
  // Settings are stored and shown in clear: a secret-looking extra key belongs in signing_secret(s).
  for (const k of Object.keys(config)) if (/secret|password|token|private/i.test(k)) errors.push({ field: `config.${k}`, message: 'looks like a secret; use config.signing_secret' });
  if (errors.length) throw AppError.validation(errors);
  if (config.ip_allowlist?.length) requirePlan(tenant.plan, 'pro', 'IP allowlisting');
  if (config.dedicated_ip) requirePlan(tenant.plan, 'business', 'Dedicated receive IPs');
  // Stored as the map ingest reads: header → expected value, null = must be present.
  if (Array.isArray(config.required_headers)) config.required_headers = Object.fromEntries(config.required_headers.map((h) => [h.toLowerCase(), null]));
  const secrets = signing_secret !== undefined ? [signing_secret] : (signing_secrets ?? null);
  return { provider: (body.provider ?? body.type)!, config, secrets };
}

async function assertCluster(app: AppContext, tenantId: string, clusterId: string | null | undefined): Promise<void> {
  if (!clusterId) return;
  const found = await app.prisma.cluster.count({ where: { id: clusterId, tenantId, state: { not: 'DELETED' } } });
  if (!found) throw new AppError('unprocessable-entity', 'The cluster does not exist in this tenant.', { errors: [{ field: 'cluster_id', message: 'does not exist' }] });
}

export async function createIngester(app: AppContext, tenant: TenantRef, body: IngesterBody): Promise<Ingester> {
  const p = prepare(tenant, body);
  await assertCluster(app, tenant.id, body.cluster_id);
  const row = await app.prisma.$transaction(async (tx) => {
    await lockNames(tx, 'ingester', tenant.id);
    if (await tx.ingester.count({ where: { tenantId: tenant.id, name: body.name, state: { not: 'DELETED' } } })) throw duplicateName('ingester', body.name);
    return tx.ingester.create({
      data: {
        id: newId('ing'),
        tenantId: tenant.id,
        clusterId: body.cluster_id ?? null,
        name: body.name,
        provider: p.provider,
        config: p.config as object,
        secrets: (p.secrets ?? []).map((s) => app.box.seal(s)),
        state: body.state ?? 'ACTIVE',
      },
    });
  });
  await announce(app, { kind: 'ingester', id: row.id, tenantId: tenant.id });
  return row;
}

export async function findIngester(app: AppContext, tenantId: string, id: string): Promise<Ingester> {
  const row = await app.prisma.ingester.findFirst({ where: { id, tenantId, state: { not: 'DELETED' } } });
  if (!row) throw AppError.notFound('ingester');
  return row;
}

export async function updateIngester(app: AppContext, tenant: TenantRef, id: string, body: IngesterBody): Promise<Ingester> {
  const p = prepare(tenant, body);
  await assertCluster(app, tenant.id, body.cluster_id);
  const row = await app.prisma.$transaction(async (tx) => {
    await lockNames(tx, 'ingester', tenant.id);
    const current = await tx.ingester.findFirst({ where: { id, tenantId: tenant.id, state: { not: 'DELETED' } } });
    if (!current) throw AppError.notFound('ingester');
    if (await tx.ingester.count({ where: { tenantId: tenant.id, name: body.name, state: { not: 'DELETED' }, id: { not: id } } })) throw duplicateName('ingester', body.name);
    return tx.ingester.update({
      where: { id },
      data: {
        name: body.name,
        provider: p.provider,
        config: p.config as object,
        ...(body.cluster_id !== undefined ? { clusterId: body.cluster_id } : {}),
        ...(p.secrets ? { secrets: p.secrets.map((s) => app.box.seal(s)) } : {}),
      },
    });
  });
  await announce(app, { kind: 'ingester', id, tenantId: tenant.id });
  return row;
}
