import { createHash, type BinaryLike } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { newId, type Pool } from '@hookline/db';
import { AppError } from '@hookline/errors';
import type { Logger } from '@hookline/logger';
import type { TraceContext } from '@hookline/observability';
import { getStringAt, ipInAny, type Cidr } from '@hookline/http';
import { resolveClientIp } from './client-ip';
import { unavailable, type EventBatcher } from './event-batcher';
import type { IngesterCache } from './ingester-cache';
import type { IngesterSettings } from './ingester-settings';
import { PROVIDER_ADAPTERS, type ProviderContext } from './providers';
import { recordRejection, type Rejection } from './record-rejection';
import { checkRequiredHeaders } from './source-rules';
import { correlationId } from './trace';
import { dedupKeyOf } from './dedup-key';
import { findKey, holdKey } from './retry-key';
import type { WriteOutcome } from './write-batch';

export interface IngestDeps {
  pool: Pool;
  cache: IngesterCache;
  batcher: EventBatcher;
  logger: Logger;
  /** INGEST_PUBLIC_URL without a trailing slash. */
  publicUrl: string;
  trustedProxies: readonly Cidr[];
  /** INGEST_DB_TIMEOUT_MS: the longest wait for one PostgreSQL statement. */
  dbTimeoutMs?: number;
  /** DEDUP_WINDOW_SECONDS: how long a key recorded here (a signed generic request's Idempotency-Key) lives. */
  dedupWindowSeconds: number;
  /** The longest timestamp tolerance a dedup record outlives (toleranceCap): an ingester's longer one is cut to it. */
  maxToleranceSeconds?: number;
  nowSeconds?: () => number;
}

export interface IngestInput {
  ingesterId: string;
  /** The ingester `ingesterId` names, resolved (lookupIngester) before the body was read: known and ACTIVE. */
  ingester: IngesterSettings;
  /** The request path as received (`/in/<id>/…`) and the raw query string, without `?`. */
  path: string;
  query: string | null;
  headers: IncomingHttpHeaders;
  body: Buffer;
  peerIp: string | undefined;
  receivedAt: Date;
  requestId: string;
  /** The request's span: its trace id becomes the event's correlation id (else one from `traceparent`). */
  trace?: { context: TraceContext; traceparent: string };
  /** Filled with the ids learnt on the way (ingester, tenant, provider) for the request's log line and metrics. */
  logFields?: Record<string, unknown>;
}

const MAX_KEY = 200;
const sha256 = (v: BinaryLike): string => createHash('sha256').update(v).digest('hex');
// Keys are stored as given unless very long or holding a NUL (U+0000, which a text column
// refuses: one such row would fail the whole group commit), then as their hash, still unique.
const storedKey = (key: string): string => (key.length > MAX_KEY || key.includes('\0') ? `sha256:${sha256(key)}` : key);

/** Room for clocks that differ between ingest replicas (a signature checked by one, its replay by another). */
const CLOCK_MARGIN_SECONDS = 60;

/**
 * The longest timestamp tolerance that DEDUP_WINDOW_SECONDS covers. A signed id's record is
 * made when its request is first accepted, which may be as early as t - tolerance, and a
 * replay is accepted up to t + tolerance: the record must outlive twice the tolerance, or a
 * replay that comes after it expired would take it over as a new event.
 */
export const toleranceCap = (dedupWindowSeconds: number): number => Math.max(1, Math.floor((dedupWindowSeconds - CLOCK_MARGIN_SECONDS - 1) / 2));

const conflict = (key: string): AppError =>
  new AppError('idempotency-conflict', 'This Idempotency-Key was already used on this endpoint with a different request body.', { idempotency_key: key });

const activeOnly = (ing: IngesterSettings | null): IngesterSettings => {
  if (!ing || !ing.active) throw new AppError('not-found', 'No ingester with this id accepts events.');
  return ing;
};

/**
 * The ingester a request names, looked up before its body is read (an unknown id must not
 * make ingest hold a body): 404 unknown or not ACTIVE, 503 when PostgreSQL cannot answer.
 * Not async, so that the caller's one await on the cache is the only one (the hot path).
 */
export function lookupIngester(deps: Pick<IngestDeps, 'cache' | 'logger'>, ingesterId: string, requestId: string): Promise<IngesterSettings> {
  return deps.cache.get(ingesterId).then(
    activeOnly,
    (err: Error) => {
      deps.logger.error('ingester lookup failed', { ingester_id: ingesterId, request_id: requestId, error: err.message });
      throw new AppError('service-unavailable', 'The endpoint cannot be resolved right now; retry later.', {}, { 'retry-after': '1' });
    },
  );
}

/**
 * One inbound webhook, after its ingester was resolved (lookupIngester: 404 unknown or
 * inactive ingester, 503 lookup failed) and its body read. Outcomes: accepted → 202 (stored and
 * committed), duplicate → the original 202 (the original event id) with
 * Idempotent-Replayed: true (a signed generic request: its signed id's, or else its
 * Idempotency-Key's). Refusals throw AppError: 403 address not allowed, 400 required header rule,
 * 401 signature (each with one ingest_rejections row), 409 idempotency-conflict (an
 * Idempotency-Key, used as a dedup key because the provider gave no delivery id or the
 * request is signed generic (a second key beside its signed id),
 * reused with another body; nothing stored, no rejection row), 503 PostgreSQL unavailable.
 */
export async function ingestEvent(deps: IngestDeps, input: IngestInput): Promise<Extract<WriteOutcome, { kind: 'accepted' | 'duplicate' }>> {
  const ing = input.ingester;
  if (input.logFields) Object.assign(input.logFields, { ingester_id: ing.id, tenant_id: ing.tenantId, provider: ing.provider });
  const sourceIp = resolveClientIp(input.peerIp, input.headers['x-forwarded-for'], deps.trustedProxies);
  const reject = async (r: Pick<Rejection, 'reasonCode' | 'detail'>, err: AppError): Promise<never> => {
    deps.logger.info('inbound request rejected', { ingester_id: ing.id, tenant_id: ing.tenantId, request_id: input.requestId, reason_code: r.reasonCode, detail: r.detail, source_ip: sourceIp });
    await recordRejection(deps.pool, deps.logger, { ...r, tenantId: ing.tenantId, ingesterId: ing.id, sourceIp }, deps.dbTimeoutMs);
    throw err;
  };

  if (ing.allowlist && (sourceIp === null || !ipInAny(sourceIp, ing.allowlist))) {
    await reject({ reasonCode: 'forbidden', detail: 'ip_not_allowed' }, new AppError('permission-denied', 'The source address is not allowed to post to this endpoint.', { resource_id: ing.id, reason_code: 'forbidden' }));
  }
  const headerErrors = checkRequiredHeaders(ing.requiredHeaders, input.headers);
  if (headerErrors.length > 0) {
    await reject(
      { reasonCode: 'validation_error', detail: headerErrors.map((e) => `${e.field} ${e.message}`).join('; ') },
      new AppError('validation-error', 'The request does not meet the header rules of this endpoint.', { errors: headerErrors, reason_code: 'validation_error' }),
    );
  }

  const ctx = providerContext(deps, ing, input);
  const adapter = PROVIDER_ADAPTERS[ing.provider];
  if (ing.secrets.length > 0) {
    const result = adapter.verify(ctx);
    if (!result.ok) {
      await reject(
        { reasonCode: 'provider_verification_failed', detail: result.reason },
        new AppError('unauthorized', `The ${ing.provider} signature could not be verified.`, { reason_code: 'provider_verification_failed', reason: result.reason }),
      );
    }
  }

  const { key, explicit, retryKey } = dedupKeyOf(input.headers['idempotency-key'], adapter.dedupId(ctx), adapter.idPerSignature === true);
  // A signed generic request's Idempotency-Key: a re-signed retry of an event already stored under it is that event.
  if (retryKey) {
    const prior = await findKey(deps.pool, ing.id, storedKey(retryKey), deps.dbTimeoutMs).catch((err: Error) => {
      deps.logger.error('idempotency key lookup failed', { ingester_id: ing.id, request_id: input.requestId, error: err.message });
      throw unavailable();
    });
    if (prior && prior.requestHash !== ctx.bodySha256()) throw conflict(retryKey);
    if (prior) return { kind: 'duplicate', eventId: prior.eventId };
  }
  const type = ing.eventTypePath ? getStringAt(ctx.json(), ing.eventTypePath) : adapter.eventType(ctx);
  // A text column refuses U+0000: stored, it would fail the group commit of every event
  // written with it (other tenants' too), on each retry of the sender.
  if (type?.includes('\0')) {
    await reject(
      { reasonCode: 'validation_error', detail: 'event type contains U+0000' },
      new AppError('validation-error', 'The event type contains a NUL character (U+0000), which cannot be stored.', { errors: [{ field: 'type', message: 'must not contain U+0000' }], reason_code: 'validation_error' }),
    );
  }
  const outcome = await deps.batcher.submit({
    eventId: newId('evt'),
    tenantId: ing.tenantId,
    ingesterId: ing.id,
    type,
    correlationId: input.trace?.context.traceId ?? correlationId(input.headers['traceparent']),
    traceparent: input.trace?.traceparent,
    dedupKey: key ? storedKey(key) : null,
    explicitKey: explicit !== null,
    sourceIp,
    receivedAt: input.receivedAt,
    contentType: typeof input.headers['content-type'] === 'string' ? input.headers['content-type'] : null,
    headers: input.headers,
    query: input.query,
    body: input.body,
  });
  if (outcome.kind === 'conflict') throw conflict(explicit ?? '');
  if (retryKey && outcome.kind === 'accepted') {
    // The event is committed: a failure here costs a later retry's dedup, never this answer.
    await holdKey(deps.pool, { tenantId: ing.tenantId, ingesterId: ing.id, key: storedKey(retryKey), requestHash: ctx.bodySha256(), eventId: outcome.eventId }, deps.dedupWindowSeconds, deps.dbTimeoutMs).catch((err: Error) =>
      deps.logger.warn('idempotency key not recorded; a re-signed retry under it would be a new event', { ingester_id: ing.id, event_id: outcome.eventId, request_id: input.requestId, error: err.message }),
    );
  }
  return outcome;
}

function providerContext(deps: IngestDeps, ing: IngesterSettings, input: IngestInput): ProviderContext {
  let parsed: { value: unknown } | null = null;
  let bodyHash: string | undefined;
  const query = input.query !== null ? `?${input.query}` : '';
  return {
    body: input.body,
    headers: input.headers,
    secrets: ing.secrets,
    toleranceSeconds: Math.min(ing.toleranceSeconds, deps.maxToleranceSeconds ?? Number.POSITIVE_INFINITY),
    nowSeconds: deps.nowSeconds ? deps.nowSeconds() : Math.floor(Date.now() / 1000),
    url: `${deps.publicUrl}${input.path}${query}`,
    hookSuffix: `${input.path.slice(`/in/${input.ingesterId}`.length)}${query}`,
    twilioUrlSuffixes: ing.twilioUrlSuffixes,
    ingesterId: ing.id,
    logger: deps.logger,
    bodySha256: () => (bodyHash ??= sha256(input.body)),
    json() {
      if (!parsed) {
        try {
          parsed = { value: input.body.length > 0 ? (JSON.parse(input.body.toString('utf8')) as unknown) : undefined };
        } catch {
          parsed = { value: undefined };
        }
      }
      return parsed.value;
    },
  };
}
