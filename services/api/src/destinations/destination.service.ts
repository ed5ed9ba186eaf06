import { AppError, type FieldError } from '@hookline/errors';
import { newId } from '@hookline/db';
import { newWhsecSecret, whsecFieldErrors } from '@hookline/signing';
import type { AppContext } from '../context';
import { asObject, iso } from '../lib/format';
import { announce, duplicateName, lockNames, unresolved } from '../lib/config-writes';
import type { Destination } from '../lib/models';
import { REDACTED, redactSecretLookingKeys, secretLookingKeyErrors } from '../ingesters/secret-config-keys';
import { isCredentialHeader, isSecretLookingKey } from '@hookline/logger';
import { certificateBundleProblem, certificatesOnly, isSendableHeaderValue, RESERVED_HEADER } from '@hookline/delivery';
import type { DestinationBody, DestinationConfigInput } from './destination.schema';
import { keepRedactedHeaders, NOTHING_STORED, shownHeaders } from '../lib/credential-headers';
import { hasMaskedCredentials, hasUrlCredentials, maskUrlCredentials, normaliseCredentialUrl, restoreUrlCredentials, URL_SECRET_MASK } from './url-credentials';

// Header values that carry credentials are write-only, like the signing secret: views show
// the placeholder, and a PATCH that sends the placeholder back keeps the stored value, unless
// it moves the URL to another origin or the destination to another cluster (cluster_id
// changed: onto an edge cluster, between clusters, or off one). Then each must be sent again
// or removed, as the URL password must: a write cannot send stored credentials to a server,
// or to a cluster's agents, of its choosing. Which headers are credentials: isCredentialHeader
// (@hookline/logger, secret-names.ts); views and placeholders: lib/credential-headers.ts.
export { REDACTED, isCredentialHeader };

/** A stored certificate (or CA bundle) as shown: its CERTIFICATE blocks only, so a private key stored beside it never is. */
const shownCertificates = (pem: unknown): string | undefined => (typeof pem === 'string' ? certificatesOnly(pem) : undefined);

export function destinationToView(row: Destination, shownSecret?: string): Record<string, unknown> {
  const { mtls, ...stored } = asObject(row.config);
  const config = redactSecretLookingKeys(stored);
  // A reserved header stored before it was reserved (User-Agent) is never sent: not shown
  // either, so that a view sent back as a PATCH is not refused for it.
  if (config['headers'] !== undefined) config['headers'] = Object.fromEntries(Object.entries(shownHeaders(config['headers'])).filter(([name]) => !RESERVED_HEADER.test(name)));
  const m = asObject(mtls);
  return {
    id: row.id,
    tenant_id: row.tenantId,
    cluster_id: row.clusterId,
    name: row.name,
    // The userinfo credential (sent as Basic auth) and credential query values are write-only:
    // https://user:****@host/path?access_token=****.
    url: maskUrlCredentials(row.url),
    method: row.method,
    state: row.state,
    disabled_reason: row.disabledReason,
    // cert and ca as their certificate blocks only: a row stored before anything else was
    // refused (a cert pasted with its key) shows no key.
    config: { ...config, ...(mtls ? { mtls: { cert: shownCertificates(m['cert']), ...(m['ca'] ? { ca: shownCertificates(m['ca']) } : {}), key_set: Boolean(m['key_sealed']) } } : {}) },
    signing_secrets_count: row.secrets.length,
    ...(shownSecret ? { signing_secret: shownSecret } : {}),
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
  };
}

const UNSENDABLE_STORED =
  'is the redaction placeholder and the stored value cannot be sent (a control character, DEL or a character beyond U+00FF; it is left out of requests): send a new value in clear, or leave the header out to remove it';

// Hop-by-hop headers and the ones the deliverer owns (signatures, idempotency key, User-Agent):
// RESERVED_HEADER, the expression the deliverer leaves them out by (@hookline/delivery).

/** Reserved names; and, given the stored headers (none on create), placeholders with nothing to keep. */
function checkHeaders(config: DestinationConfigInput | undefined, errors: FieldError[], stored?: Record<string, unknown>): void {
  const headers = config?.['headers'];
  if (!headers || typeof headers !== 'object') return;
  for (const [name, value] of Object.entries(headers)) {
    if (RESERVED_HEADER.test(name)) errors.push({ field: `config.headers.${name}`, message: 'is set by Hookline and cannot be configured' });
    else if (stored && value === REDACTED && typeof stored[name] !== 'string') errors.push({ field: `config.headers.${name}`, message: NOTHING_STORED });
  }
}

// A stored credential is not carried to another origin or cluster by placeholder or by omission.
const MOVED_ORIGIN = 'the url moves to another origin (scheme, host or port)';
const MOVED_CLUSTER = 'cluster_id moves the destination to another cluster (or onto or off one), whose delivery agents would send it';
type Move = typeof MOVED_ORIGIN | typeof MOVED_CLUSTER;
const movedCredential = (move: Move) => `is a stored credential header and ${move}: send config.headers with its value again in clear, or without it to remove it`;
const movedPlaceholder = (move: Move) => `is the redaction placeholder and ${move}: send the value again in clear, or leave the header out to remove it`;
const movedUrlCredential = (move: Move) => `keeps the stored URL credential (userinfo or credential query value) and ${move}: send url again with the credential in clear, or without it to remove it`;

/** True when the two URLs differ in scheme, host or port (path, query and userinfo aside). */
function originChanged(incoming: string, stored: string): boolean {
  try {
    return new URL(incoming).origin !== new URL(stored).origin;
  } catch {
    return true;
  }
}

/** True when a PATCH's cluster_id (undefined: not sent) puts the destination on another cluster, onto one or off one. */
function clusterChanged(incoming: string | null | undefined, stored: string | null): boolean {
  return incoming !== undefined && (incoming ?? null) !== stored;
}

/**
 * The headers a PATCH stores, each placeholder replaced by the stored value it stands for;
 * undefined when the PATCH leaves the stored headers as they are. When the URL moves to
 * another origin (scheme, host, port) or the destination to another cluster (`moved`),
 * nothing write-only is carried there unseen, as for the URL password: a placeholder is
 * refused, and so is every stored credential header the PATCH would keep by not sending
 * config.headers; each must be sent again in clear or left out of the headers sent (which
 * removes it).
 */
function headersToStore(config: DestinationConfigInput | undefined, stored: Record<string, unknown>, moved: Move | null, errors: FieldError[]): Record<string, unknown> | undefined {
  const headers = config?.['headers'];
  if (!headers || typeof headers !== 'object') {
    if (moved) {
      for (const name of Object.keys(stored)) {
        if (isCredentialHeader(name)) errors.push({ field: `config.headers.${name}`, message: movedCredential(moved) });
      }
    }
    return undefined;
  }
  return keepRedactedHeaders(headers as Record<string, unknown>, stored, 'config.headers', errors, (kept) =>
    // An unsendable value was stored before such values were refused: the deliverer leaves it out, so it is not kept.
    moved ? movedPlaceholder(moved) : !isSendableHeaderValue(kept) ? UNSENDABLE_STORED : null,
  );
}

function checkUrl(url: string | undefined, errors: FieldError[]): void {
  if (url === undefined) return;
  try {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
  } catch {
    errors.push({ field: 'url', message: 'must be an absolute http(s) URL' });
  }
}

const SECRET_KEY_HINT = 'send credentials in a config.headers entry (write-only) or the URL userinfo';

/** Unknown config keys are stored and shown in clear: secret-looking ones, at any depth, are refused (null on PATCH removes one). */
function checkConfigKeys(config: DestinationConfigInput | undefined, errors: FieldError[], patch: boolean): void {
  errors.push(...secretLookingKeyErrors(config, SECRET_KEY_HINT, { skip: ['headers', 'mtls'], allowNull: patch }));
}

/**
 * The URL to store. The masked form a view shows (https://user:****@host/…?api_key=****)
 * sent back keeps the stored credentials, as long as it points at the same origin and user
 * (and, for query values, nothing else in the URL changed: restoreUrlCredentials); with
 * nothing to keep (on create, or another origin, user or URL) it is refused rather than
 * stored as the credential "****". A URL carrying a credential is stored as parsed (`new URL(url).href`), so
 * what is stored, shown masked and sent is the same credential.
 */
function urlToStore(given: string, stored: string | null, errors: FieldError[]): string {
  const url = normaliseCredentialUrl(given);
  if (!hasMaskedCredentials(url)) return url;
  const restored = stored === null ? null : restoreUrlCredentials(url, stored);
  if (restored !== null) return restored;
  const message =
    stored === null
      ? `carries the credential mask (${URL_SECRET_MASK}); send the real credential`
      : `carries the credential mask (${URL_SECRET_MASK}) but the stored URL has no credential to keep for this origin and user (and, for query values, this same URL); send the real credential`;
  errors.push({ field: 'url', message });
  return url;
}

/**
 * config.mtls.cert and ca are stored and shown in clear, so they must be certificates and
 * nothing else: one or more PEM CERTIFICATE blocks that parse as X.509, and no other PEM
 * block (a cert pasted with its private key is refused; the key goes in mtls.key, sealed).
 */
function checkMtls(config: DestinationConfigInput | undefined, errors: FieldError[]): void {
  const mtls = config?.mtls;
  if (!mtls || typeof mtls !== 'object') return;
  for (const field of ['cert', 'ca'] as const) {
    const pem = mtls[field];
    const problem = typeof pem === 'string' ? certificateBundleProblem(pem) : null;
    if (problem) errors.push({ field: `config.mtls.${field}`, message: problem });
  }
}

/** The stored form of config: the mTLS private key sealed, never kept in clear; cert and ca as their certificate blocks only. */
function storeConfig(app: AppContext, input: DestinationConfigInput): Record<string, unknown> {
  const { mtls, ...rest } = input;
  if (!mtls) return rest;
  return { ...rest, mtls: { cert: certificatesOnly(mtls.cert), ...(mtls.ca ? { ca: certificatesOnly(mtls.ca) } : {}), key_sealed: app.box.seal(mtls.key) } };
}

/** Inside the write's transaction, after lockNames: a cluster DELETE takes the same locks, so it cannot slip between this check and the write. */
async function assertCluster(db: Pick<AppContext['prisma'], 'cluster'>, tenantId: string, clusterId: string | null | undefined): Promise<void> {
  if (clusterId && !(await db.cluster.count({ where: { id: clusterId, tenantId, state: { not: 'DELETED' } } }))) {
    throw unresolved([{ field: 'cluster_id', message: 'does not exist' }]);
  }
}

/**
 * Creates a destination; without a signing secret one is generated and returned once. A
 * given secret must be a Standard Webhooks one (`whsec_` + base64 of 24..64 bytes); stored
 * secrets are not re-checked, so older ones keep signing.
 */
export async function createDestination(app: AppContext, tenantId: string, body: DestinationBody & { name: string; url: string }): Promise<{ row: Destination; secret: string }> {
  const errors: FieldError[] = [];
  checkUrl(body.url, errors);
  checkHeaders(body.config, errors, {});
  checkConfigKeys(body.config, errors, false);
  checkMtls(body.config, errors);
  errors.push(...whsecFieldErrors('signing_secret', body.signing_secret));
  const url = urlToStore(body.url, null, errors);
  if (errors.length) throw AppError.validation(errors);
  const secret = body.signing_secret ?? newWhsecSecret();
  const row = await app.prisma.$transaction(async (tx) => {
    await lockNames(tx, 'destination', tenantId);
    await assertCluster(tx, tenantId, body.cluster_id);
    if (await tx.destination.count({ where: { tenantId, name: body.name, state: { not: 'DELETED' } } })) throw duplicateName('destination', body.name);
    return tx.destination.create({
      data: {
        id: newId('dst'),
        tenantId,
        clusterId: body.cluster_id ?? null,
        name: body.name,
        url,
        method: body.method ?? 'POST',
        config: storeConfig(app, body.config ?? {}) as object,
        secrets: [app.box.seal(secret)],
        state: body.state ?? 'ACTIVE',
      },
    });
  });
  await announce(app, { kind: 'destination', id: row.id, tenantId });
  return { row, secret };
}

export async function findDestination(app: AppContext, tenantId: string, id: string): Promise<Destination> {
  const row = await app.prisma.destination.findFirst({ where: { id, tenantId, state: { not: 'DELETED' } } });
  if (!row) throw AppError.notFound('destination');
  return row;
}

/** PATCH: merges config keys; a new (checked as on create) or rotated secret becomes current, the previous one stays valid. */
export async function patchDestination(app: AppContext, tenantId: string, id: string, body: DestinationBody): Promise<{ row: Destination; secret?: string }> {
  const errors: FieldError[] = [];
  checkUrl(body.url, errors);
  checkHeaders(body.config, errors);
  checkConfigKeys(body.config, errors, true);
  checkMtls(body.config, errors);
  errors.push(...whsecFieldErrors('signing_secret', body.signing_secret));
  if (body.signing_secret && body.rotate_signing_secret) errors.push({ field: 'rotate_signing_secret', message: 'cannot be combined with signing_secret' });
  if (errors.length) throw AppError.validation(errors);
  const secret = body.signing_secret ?? (body.rotate_signing_secret ? newWhsecSecret() : undefined);
  const row = await app.prisma.$transaction(async (tx) => {
    await lockNames(tx, 'destination', tenantId);
    await assertCluster(tx, tenantId, body.cluster_id);
    const current = await tx.destination.findFirst({ where: { id, tenantId, state: { not: 'DELETED' } } });
    if (!current) throw AppError.notFound('destination');
    if (body.name && (await tx.destination.count({ where: { tenantId, name: body.name, state: { not: 'DELETED' }, id: { not: id } } }))) throw duplicateName('destination', body.name);
    // Checked together, before anything is written: the URL's mask, and the stored headers'
    // placeholders (none carried to another origin or another cluster). A cluster_id change
    // is an origin change for this rule: the destination's requests are then sent by another
    // cluster's agents (or by the central deliverer), so the stored URL credential and
    // credential headers are not taken there unseen either, whether kept by omission or by
    // the mask / placeholder.
    const invalid: FieldError[] = [];
    const url = body.url !== undefined ? urlToStore(body.url, current.url, invalid) : undefined;
    const moved: Move | null =
      body.url !== undefined && originChanged(body.url, current.url) ? MOVED_ORIGIN : clusterChanged(body.cluster_id, current.clusterId) ? MOVED_CLUSTER : null;
    if (moved === MOVED_CLUSTER && hasUrlCredentials(current.url) && !invalid.some((e) => e.field === 'url')) {
      // Kept by leaving url out, or by sending it back with the mask (restored above).
      if (body.url === undefined || hasMaskedCredentials(body.url)) invalid.push({ field: 'url', message: movedUrlCredential(MOVED_CLUSTER) });
    }
    const headers = headersToStore(body.config, asObject(asObject(current.config)['headers']), moved, invalid);
    if (invalid.length) throw AppError.validation(invalid);
    const config = body.config ? { ...asObject(current.config), ...storeConfig(app, headers ? { ...body.config, headers } : body.config) } : undefined;
    if (config && body.config?.mtls === null) delete config['mtls'];
    // null removes a secret-looking key stored before such keys were refused.
    if (config) for (const [k, v] of Object.entries(body.config ?? {})) if (v === null && isSecretLookingKey(k)) delete config[k];
    return tx.destination.update({
      where: { id },
      data: {
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(url !== undefined ? { url } : {}),
        ...(body.method !== undefined ? { method: body.method } : {}),
        ...(body.cluster_id !== undefined ? { clusterId: body.cluster_id } : {}),
        ...(config ? { config: config as object } : {}),
        ...(secret ? { secrets: [app.box.seal(secret), ...current.secrets.slice(0, 1)] } : {}),
      },
    });
  });
  await announce(app, { kind: 'destination', id, tenantId });
  return { row, secret: secret && !body.signing_secret ? secret : undefined };
}
