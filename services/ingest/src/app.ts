import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError } from '@hookline/config';
import type { Pool } from '@hookline/db';
import { AppError } from '@hookline/errors';
import { BodyTooLargeError, closeServer, readBody, requestId, sendJson, sendProblem, type Cidr } from '@hookline/http';
import type { Logger } from '@hookline/logger';
import { createMetrics, createTracer, observeHttp, sendMetrics, type HttpObservation, type Observability } from '@hookline/observability';
import { onConfigChange, type Producer, type Redis } from '@hookline/queues';
import { createSecretBox } from '@hookline/signing';
import type { IngestConfig } from './config';
import { unsupportedEncoding } from './content-encoding';
import { createEventBatcher, type EventBatcher } from './event-batcher';
import { createIngesterCache, type IngesterCache } from './ingester-cache';
import { ingestEvent, lookupIngester, toleranceCap, type IngestDeps } from './ingest-event';
import type { IngesterSettings } from './ingester-settings';
import { outcomeOfError, type IngestOutcome } from './ingest-outcome';

export interface IngestAppDeps {
  config: Pick<
    IngestConfig,
    | 'INGEST_PUBLIC_URL' | 'PAYLOAD_LIMIT_BYTES' | 'INGEST_DB_TIMEOUT_MS' | 'SIGNATURE_TOLERANCE_SECONDS' | 'INGESTER_CACHE_TTL_MS' | 'DEDUP_WINDOW_SECONDS'
    | 'INGEST_BATCH_MAX' | 'INGEST_FLUSHES_IN_FLIGHT' | 'INGEST_ENQUEUE_TIMEOUT_MS' | 'INGEST_ROUTE_LINGER_MS' | 'INGEST_ROUTE_BATCH_MAX'
    | 'SECRETS_KEY' | 'QUEUE_PREFIX' | 'INGEST_MAX_BUFFERED_BYTES' | 'INGEST_MAX_CONNECTIONS' | 'INGEST_REQUEST_TIMEOUT_MS'
  > &
    Partial<Pick<IngestConfig, 'METRICS_TOKEN'>>;
  trustedProxies: readonly Cidr[];
  pool: Pool;
  producer: Producer;
  /** The producer's connection: readiness pings it. */
  redis: Redis;
  /** A dedicated connection for configuration-change announcements (optional in tests). */
  subscriber?: Redis;
  logger: Logger;
  /** Metrics and tracer of the process (main.ts); tests get private ones. */
  observability?: Observability;
}

export interface IngestApp {
  server: Server;
  cache: IngesterCache;
  batcher: EventBatcher;
  /** Body bytes reserved by requests being received or processed (INGEST_MAX_BUFFERED_BYTES caps it). */
  bufferedBytes(): number;
  /** Listens and returns the base URL (`http://host:port`). */
  listen(port: number, host: string): Promise<string>;
  /** Readiness goes false, the server stops accepting, open requests finish, batches flush. */
  close(timeoutMs: number): Promise<void>;
}

const HOOK_PATH = /^\/in\/([A-Za-z0-9_-]{1,100})(?:\/.*)?$/;
/** How often node checks INGEST_REQUEST_TIMEOUT_MS (its default, 30 s, let a request run up to twice its timeout). */
const TIMEOUT_CHECK_MS = 1000;

/** The ingest HTTP server, bare node:http (5x express's ceiling on this path). */
export function createIngestApp(deps: IngestAppDeps): IngestApp {
  const { config, logger } = deps;
  if (config.INGEST_MAX_BUFFERED_BYTES < config.PAYLOAD_LIMIT_BYTES) {
    // Else a chunked body (it reserves the limit) or one at the limit would always be refused.
    throw new ConfigError([`INGEST_MAX_BUFFERED_BYTES (${config.INGEST_MAX_BUFFERED_BYTES}) must be at least PAYLOAD_LIMIT_BYTES (${config.PAYLOAD_LIMIT_BYTES})`]);
  }
  const { metrics, tracer } = deps.observability ?? { metrics: createMetrics('ingest', { defaultMetrics: false }), tracer: createTracer({ service: 'ingest', logger, endpoint: '' }) };
  // One line per request: accepted ones at debug (the hot path; the router's per-job lines
  // carry every accepted event id at info), refusals at info, failures at warn.
  const observer = { metrics, logger, tracer, successLevel: 'debug' as const };
  const cache = createIngesterCache(deps.pool, createSecretBox(config.SECRETS_KEY), config.INGESTER_CACHE_TTL_MS, config.SIGNATURE_TOLERANCE_SECONDS, config.INGEST_DB_TIMEOUT_MS);
  // Known to be down (not merely still connecting at boot): skip the enqueue at once.
  const queueReady = (): boolean => !['reconnecting', 'close', 'end'].includes(deps.redis.status);
  const batcher = createEventBatcher({ ...deps, queueReady, metrics }, {
    maxBatch: config.INGEST_BATCH_MAX,
    maxInFlight: config.INGEST_FLUSHES_IN_FLIGHT,
    dedupWindowSeconds: config.DEDUP_WINDOW_SECONDS,
    dbTimeoutMs: config.INGEST_DB_TIMEOUT_MS,
    enqueueTimeoutMs: config.INGEST_ENQUEUE_TIMEOUT_MS,
    routeLingerMs: config.INGEST_ROUTE_LINGER_MS,
    routeBatchMax: config.INGEST_ROUTE_BATCH_MAX,
  });
  const maxToleranceSeconds = toleranceCap(config.DEDUP_WINDOW_SECONDS);
  if (config.SIGNATURE_TOLERANCE_SECONDS > maxToleranceSeconds) {
    logger.warn('SIGNATURE_TOLERANCE_SECONDS is cut to what DEDUP_WINDOW_SECONDS covers, so that a signed request cannot be replayed once its dedup record expired', {
      signature_tolerance_seconds: config.SIGNATURE_TOLERANCE_SECONDS,
      dedup_window_seconds: config.DEDUP_WINDOW_SECONDS,
      tolerance_used_seconds: maxToleranceSeconds,
    });
  }
  const ingest: IngestDeps = {
    pool: deps.pool,
    cache,
    batcher,
    logger,
    publicUrl: config.INGEST_PUBLIC_URL.replace(/\/+$/, ''),
    trustedProxies: deps.trustedProxies,
    dbTimeoutMs: config.INGEST_DB_TIMEOUT_MS,
    dedupWindowSeconds: config.DEDUP_WINDOW_SECONDS,
    maxToleranceSeconds,
  };
  let draining = false;
  /** Body bytes reserved (see receive): at most INGEST_MAX_BUFFERED_BYTES. */
  let buffered = 0;

  if (deps.subscriber) {
    // Announcements sent while the subscriber was disconnected are lost: drop the whole cache.
    onConfigChange(deps.subscriber, config.QUEUE_PREFIX, (change) => cache.invalidate(change), () => cache.clear()).catch((err: Error) =>
      logger.warn('config-change subscription failed; the ingester cache relies on its TTL', { error: err.message }),
    );
  }

  async function readiness(res: ServerResponse, reqId: string): Promise<void> {
    const within = <T>(p: Promise<T>): Promise<boolean> =>
      Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 1000).unref())]).catch(() => false);
    const [postgres, redis] = await Promise.all([within(deps.pool.query('SELECT 1')), within(deps.redis.ping())]);
    const ok = !draining && postgres && redis;
    sendJson(res, ok ? 200 : 503, { status: ok ? 'ready' : 'not_ready', draining, checks: { postgres, redis } }, { 'x-request-id': reqId });
  }

  const counted = (obs: HttpObservation, outcome: IngestOutcome): void => {
    metrics.eventsIngested.inc({ provider: typeof obs.fields['provider'] === 'string' ? obs.fields['provider'] : 'unknown', outcome });
  };

  async function hook(req: IncomingMessage, res: ServerResponse, reqId: string, ingesterId: string, url: string, obs: HttpObservation): Promise<void> {
    obs.fields['ingester_id'] = ingesterId;
    try {
      const outcome = await receive(req, res, reqId, ingesterId, url, obs);
      obs.fields['event_id'] = outcome.eventId;
      counted(obs, outcome.kind);
      // A repeat of a live dedup key (a provider's delivery id, else Idempotency-Key) gets the
      // original result (SPEC.md Limits): the same 202 body, marked `Idempotent-Replayed`
      // (as are its log line and its `duplicate` outcome: the status does not tell it apart).
      if (outcome.kind === 'accepted') sendJson(res, 202, { event_id: outcome.eventId, status: 'accepted' }, { 'x-request-id': reqId });
      else {
        obs.fields['idempotent_replayed'] = true;
        sendJson(res, 202, { event_id: outcome.eventId, status: 'accepted' }, { 'x-request-id': reqId, 'idempotent-replayed': 'true' });
      }
    } catch (err) {
      counted(obs, outcomeOfError(err));
      throw err;
    }
  }

  async function receive(req: IncomingMessage, res: ServerResponse, reqId: string, ingesterId: string, url: string, obs: HttpObservation) {
    const receivedAt = new Date();
    const q = url.indexOf('?');
    // The ingester first: an unknown or inactive one (404) or a failed lookup (503) is
    // answered before a byte of the body is read, and the connection closed (the body is
    // unread), so that anyone can make ingest hold a body only for an endpoint that exists.
    let ingester: IngesterSettings;
    try {
      ingester = await lookupIngester(ingest, ingesterId, reqId);
    } catch (err) {
      res.setHeader('connection', 'close');
      throw err;
    }
    // A body reserves what it may take from when it starts to be read until its request is
    // answered: its Content-Length, a chunked one the limit (one over the limit is refused
    // by readBody at once, 413, and reserves nothing).
    const limit = config.PAYLOAD_LIMIT_BYTES;
    const length = req.headers['content-length'];
    let reserved = length !== undefined ? Number(length) : req.headers['transfer-encoding'] !== undefined ? limit : 0;
    if (reserved > limit) reserved = 0;
    else if (!(reserved >= 0)) reserved = limit; // not a number (node's parser refuses those): the most
    if (buffered + reserved > config.INGEST_MAX_BUFFERED_BYTES) {
      res.setHeader('connection', 'close');
      throw new AppError('service-unavailable', 'Too many request bodies are being received at once; retry later.', {}, { 'retry-after': '1' });
    }
    // The client went away during the lookup: its body would never end (as an abort mid-body).
    if (req.destroyed) throw new Error('aborted');
    buffered += reserved;
    try {
      let body: Buffer;
      try {
        body = await readBody(req, limit);
      } catch (err) {
        if (err instanceof BodyTooLargeError) {
          res.setHeader('connection', 'close');
          throw new AppError('payload-too-large', `The body exceeds the limit of ${err.limit} bytes.`, { limit_bytes: err.limit });
        }
        throw err;
      }
      // Refused once the body is read (within the limit), so the connection stays usable.
      const encoding = unsupportedEncoding(req.headers['content-encoding']);
      if (encoding) throw encoding;
      return await ingestEvent(ingest, {
        ingesterId,
        ingester,
        path: q >= 0 ? url.slice(0, q) : url,
        query: q >= 0 ? url.slice(q + 1) : null,
        headers: req.headers,
        body,
        peerIp: req.socket.remoteAddress,
        receivedAt,
        requestId: reqId,
        trace: obs.span,
        logFields: obs.fields,
      });
    } finally {
      buffered -= reserved;
    }
  }

  async function route(req: IncomingMessage, res: ServerResponse, reqId: string, obs: HttpObservation): Promise<void> {
    if (draining) res.setHeader('connection', 'close');
    const url = req.url ?? '/';
    const path = url.split('?', 1)[0]!;
    const method = req.method ?? 'GET';
    const only = (allowed: string): void => {
      if (method !== allowed && !(allowed === 'GET' && method === 'HEAD')) throw new AppError('method-not-allowed', `Use ${allowed} here.`, {}, { allow: allowed });
    };
    if (path === '/healthz') {
      obs.route = path;
      only('GET');
      return sendJson(res, 200, { status: 'ok' }, { 'x-request-id': reqId });
    }
    if (path === '/readyz') {
      obs.route = path;
      only('GET');
      return readiness(res, reqId);
    }
    if (path === '/metrics') {
      obs.route = path;
      only('GET');
      return sendMetrics(metrics.registry, req, res, config.METRICS_TOKEN);
    }
    const m = HOOK_PATH.exec(path);
    if (!m) throw new AppError('not-found', 'No such route.');
    obs.route = '/in/{ingester_id}';
    only('POST');
    return hook(req, res, reqId, m[1]!, url, obs);
  }

  // A slow or stalled client must not hold a socket (nor a body reservation) for long: the
  // whole request, headers and body, within INGEST_REQUEST_TIMEOUT_MS (node answers 408 and
  // closes), checked every second; and no more than INGEST_MAX_CONNECTIONS sockets at once.
  const requestTimeout = config.INGEST_REQUEST_TIMEOUT_MS;
  const serverOptions = { requestTimeout, headersTimeout: requestTimeout, connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_MS, requestTimeout) };
  const server = createServer(serverOptions, (req, res) => {
    const reqId = requestId(req.headers['x-request-id']);
    const obs = observeHttp(observer, req, res);
    obs.fields['request_id'] = reqId;
    route(req, res, reqId, obs).catch((err: unknown) => {
      if (!(err instanceof AppError)) logger.error('unexpected error', { request_id: reqId, error: (err as Error).message, stack: (err as Error).stack });
      if (res.headersSent) res.destroy();
      else sendProblem(res, err, reqId);
    });
  });
  server.maxConnections = config.INGEST_MAX_CONNECTIONS;

  return {
    server,
    cache,
    batcher,
    bufferedBytes: () => buffered,
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          const a = server.address() as AddressInfo;
          resolve(`http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`);
        });
      });
    },
    async close(timeoutMs) {
      draining = true;
      await closeServer(server, timeoutMs);
      await batcher.drain();
    },
  };
}
