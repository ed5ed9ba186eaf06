import { AppError, type FieldError } from '@hookline/errors';
import { DbNull, newId } from '@hookline/db';
import { validateFilter } from '@hookline/filters';
import type { Ingester } from '../lib/models';
import type { AppContext } from '../context';
import type { PlanName } from '../config';
import { asObject, iso } from '../lib/format';
import { announce, duplicateName, lockNames, requirePlan } from '../lib/config-writes';
import type { IngesterBody } from './ingester.schema';
import { whsecFieldErrors } from '@hookline/signing';
import { eventTypePathErrors } from './event-type-path';
import { ipAllowlistErrors, sameAllowlist } from './ip-allowlist';
import { REDACTED, redactSecretLookingKeys, secretLookingKeyErrors } from './secret-config-keys';

export interface TenantRef {
  id: string;
  plan: PlanName;
}

/**
 * Expected values of `required_headers` are shared secrets the sender must present: shown as
 * "[redacted]" (null, "must be present", is kept), like a destination's credential headers.
 */
function shownRequiredHeaders(rules: unknown): unknown {
  if (!rules || typeof rules !== 'object' || Array.isArray(rules)) return rules;
  return Object.fromEntries(Object.entries(rules).map(([name, value]) => [name, value === null ? null : REDACTED]));
}

/** The stored settings as shown: header-rule values and any secret-looking key stored before it was refused are redacted. */
function shownConfig(stored: unknown): Record<string, unknown> {
  const config = redactSecretLookingKeys(asObject(stored));
  if (config['required_headers'] !== undefined) config['required_headers'] = shownRequiredHeaders(config['required_headers']);
  return config;
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
    config: { ...shownConfig(row.config), signing_secret_set: row.secrets.length > 0, secrets_count: row.secrets.length },
    filters: row.filters ?? null,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
  };
}

/**
 * Splits a body's config into stored settings and secrets; every field is checked before
 * anything is written. `stored` is the current config a PUT replaces ({} on create), whose
 * header-rule values "[redacted]" stands for; undefined skips that check. `current` is the
 * stored row's provider and secret count (PUT, once the row is read).
 */
function prepare(
  body: IngesterBody,
  stored: Record<string, unknown> | undefined,
  current?: { provider: string; secretCount: number },
): { provider: string; config: Record<string, unknown>; secrets: string[] | null } {
  const errors: FieldError[] = [];
  if (!body.provider && !body.type) errors.push({ field: 'provider', message: 'is required' });
  if (body.provider && body.type && body.provider !== body.type) errors.push({ field: 'type', message: 'must equal provider when both are given' });
  const provider = body.provider ?? body.type;
  const { signing_secret, signing_secrets, ...config } = body.config ?? {};
  if (signing_secret !== undefined && signing_secrets !== undefined) errors.push({ field: 'config.signing_secrets', message: 'cannot be combined with config.signing_secret' });
  // Settings are stored and shown in clear: a secret-looking extra key belongs in signing_secret(s).
  errors.push(...secretLookingKeyErrors(config, 'use config.signing_secret', { skip: ['required_headers'] }));
  errors.push(...ipAllowlistErrors(config.ip_allowlist));
  errors.push(...eventTypePathErrors(config.event_type_path));
  // A flow filter's format and checks, field names under `filters` (null: none).
  errors.push(...validateFilter(body.filters, 'filters'));
  // Standard Webhooks secrets are base64 keys (whsec_…): a lenient decode of anything else
  // could give a short or empty HMAC key, which would let anyone sign inbound events.
  if (provider === 'standard-webhooks') errors.push(...whsecFieldErrors('config.signing_secret', signing_secret), ...whsecFieldErrors('config.signing_secrets', signing_secrets));
  // Stored secrets were checked, if at all, under the previous provider's rules (a generic
  // secret may decode to an empty Standard Webhooks key): a provider change takes them again.
  if (current && provider && provider !== current.provider && current.secretCount > 0 && signing_secret === undefined && signing_secrets === undefined) {
    errors.push({
      field: 'config.signing_secret',
      message: `must be sent again: a provider change (${current.provider} to ${provider}) needs the signing secret again (config.signing_secret, or config.signing_secrets), since the stored one was accepted under the previous provider's rules`,
    });
  }
  if (stored && config.required_headers && !Array.isArray(config.required_headers)) {
    config.required_headers = keepRedactedRules(config.required_headers, asObject(stored['required_headers']), errors);
  }
  if (errors.length) throw AppError.validation(errors);
  // Stored as the map ingest reads: header → expected value, null = must be present.
  if (Array.isArray(config.required_headers)) config.required_headers = Object.fromEntries(config.required_headers.map((h) => [h.toLowerCase(), null]));
  const secrets = signing_secret !== undefined ? [signing_secret] : (signing_secrets ?? null);
  return { provider: provider!, config, secrets };
}

/**
 * A PUT that sends a header rule's value back as "[redacted]" keeps the stored value (names
 * compared case-insensitively, as ingest does); with no stored value it is refused.
 */
function keepRedactedRules(rules: Record<string, string | null>, stored: Record<string, unknown>, errors: FieldError[]): Record<string, string | null> {
  const storedValue = (name: string): unknown => Object.entries(stored).find(([k]) => k.toLowerCase() === name.toLowerCase())?.[1];
  return Object.fromEntries(
    Object.entries(rules).map(([name, value]) => {
      if (value !== REDACTED) return [name, value];
      const kept = storedValue(name);
      if (typeof kept !== 'string') errors.push({ field: `config.required_headers.${name}`, message: 'is the redaction placeholder and there is no stored value to keep' });
      return [name, typeof kept === 'string' ? kept : value];
    }),
  );
}

/**
 * Plan gates apply to setting features up or changing them. A stored allowlist is kept (and
 * enforced by ingest) whatever the plan, so an update that leaves it as stored, or removes
 * it, needs no plan.
 */
function checkPlans(tenant: TenantRef, config: Record<string, unknown>, stored?: Record<string, unknown>): void {
  const list = config['ip_allowlist'];
  if (Array.isArray(list) && list.length > 0 && !(stored && sameAllowlist(list, stored['ip_allowlist']))) requirePlan(tenant.plan, 'pro', 'IP allowlisting');
  if (config['dedicated_ip']) requirePlan(tenant.plan, 'business', 'Dedicated receive IPs');
}

/** Inside the write's transaction, after lockNames: a cluster DELETE takes the same locks, so it cannot slip between this check and the write. */
async function assertCluster(db: Pick<AppContext['prisma'], 'cluster'>, tenantId: string, clusterId: string | null | undefined): Promise<void> {
  if (!clusterId) return;
  const found = await db.cluster.count({ where: { id: clusterId, tenantId, state: { not: 'DELETED' } } });
  if (!found) throw new AppError('unprocessable-entity', 'The cluster does not exist in this tenant.', { errors: [{ field: 'cluster_id', message: 'does not exist' }] });
}

export async function createIngester(app: AppContext, tenant: TenantRef, body: IngesterBody): Promise<Ingester> {
  const p = prepare(body, {});
  checkPlans(tenant, p.config);
  const row = await app.prisma.$transaction(async (tx) => {
    await lockNames(tx, 'ingester', tenant.id);
    await assertCluster(tx, tenant.id, body.cluster_id);
    if (await tx.ingester.count({ where: { tenantId: tenant.id, name: body.name, state: { not: 'DELETED' } } })) throw duplicateName('ingester', body.name);
    return tx.ingester.create({
      data: {
        id: newId('ing'),
        tenantId: tenant.id,
        clusterId: body.cluster_id ?? null,
        name: body.name,
        provider: p.provider,
        config: p.config as object,
        ...(body.filters ? { filters: body.filters as object } : {}),
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
  // Checked before any lookup, as on create; the placeholders against the stored row below.
  prepare(body, undefined);
  const row = await app.prisma.$transaction(async (tx) => {
    await lockNames(tx, 'ingester', tenant.id);
    await assertCluster(tx, tenant.id, body.cluster_id);
    const current = await tx.ingester.findFirst({ where: { id, tenantId: tenant.id, state: { not: 'DELETED' } } });
    if (!current) throw AppError.notFound('ingester');
    const p = prepare(body, asObject(current.config), { provider: current.provider, secretCount: current.secrets.length });
    checkPlans(tenant, p.config, asObject(current.config));
    if (await tx.ingester.count({ where: { tenantId: tenant.id, name: body.name, state: { not: 'DELETED' }, id: { not: id } } })) throw duplicateName('ingester', body.name);
    return tx.ingester.update({
      where: { id },
      data: {
        name: body.name,
        provider: p.provider,
        config: p.config as object,
        ...(body.cluster_id !== undefined ? { clusterId: body.cluster_id } : {}),
        // Left out: kept (the router's cache is dropped by the announcement below either way).
        ...(body.filters !== undefined ? { filters: body.filters === null ? DbNull : (body.filters as object) } : {}),
        ...(p.secrets ? { secrets: p.secrets.map((s) => app.box.seal(s)) } : {}),
      },
    });
  });
  await announce(app, { kind: 'ingester', id, tenantId: tenant.id });
  return row;
}
