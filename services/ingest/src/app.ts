import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Pool } from '@hookline/db';
import { AppError } from '@hookline/errors';
import { BodyTooLargeError, closeServer, readBody, requestId, sendJson, sendProblem } from '@hookline/http';
import type { Logger } from '@hookline/logger';
import { onConfigChange, type Producer, type Redis } from '@hookline/queues';
import { createSecretBox } from '@hookline/signing';
import type { Cidr } from './cidr';
import type { IngestConfig } from './config';
import { createEventBatcher, type EventBatcher } from './event-batcher';
import { createIngesterCache, type IngesterCache } from './ingester-cache';
import { ingestEvent, type IngestDeps } from './ingest-event';

export interface IngestAppDeps {
  config: Pick<
    IngestConfig,
    | 'INGEST_PUBLIC_URL' | 'PAYLOAD_LIMIT_BYTES' | 'SIGNATURE_TOLERANCE_SECONDS' | 'INGESTER_CACHE_TTL_MS' | 'DEDUP_WINDOW_SECONDS'
    | 'INGEST_BATCH_MAX' | 'INGEST_FLUSHES_IN_FLIGHT' | 'INGEST_ENQUEUE_TIMEOUT_MS' | 'SECRETS_KEY' | 'QUEUE_PREFIX'
  >;
  trustedProxies: readonly Cidr[];
  pool: Pool;
  producer: Producer;
  /** The producer's connection: readiness pings it. */
  redis: Redis;
  /** A dedicated connection for configuration-change announcements (optional in tests). */
  subscriber?: Redis;
  logger: Logger;
}

export interface IngestApp {
  server: Server;
  cache: IngesterCache;
  batcher: EventBatcher;
  /** Listens and returns the base URL (`http://host:port`). */
  listen(port: number, host: string): Promise<string>;
  /** Readiness goes false, the server stops accepting, open requests finish, batches flush. */
  close(timeoutMs: number): Promise<void>;
}

const HOOK_PATH = /^\/in\/([A-Za-z0-9_-]{1,100})(?:\/.*)?$/;

/** The ingest HTTP server, bare node:http (5x express's ceiling on this path). */
export function createIngestApp(deps: IngestAppDeps): IngestApp {
  const { config, logger } = deps;
  const cache = createIngesterCache(deps.pool, createSecretBox(config.SECRETS_KEY), config.INGESTER_CACHE_TTL_MS, config.SIGNATURE_TOLERANCE_SECONDS);
  // Known to be down (not merely still connecting at boot): skip the enqueue at once.
  const queueReady = (): boolean => !['reconnecting', 'close', 'end'].includes(deps.redis.status);
  const batcher = createEventBatcher({ ...deps, queueReady }, {
    maxBatch: config.INGEST_BATCH_MAX,
    maxInFlight: config.INGEST_FLUSHES_IN_FLIGHT,
    dedupWindowSeconds: config.DEDUP_WINDOW_SECONDS,
    enqueueTimeoutMs: config.INGEST_ENQUEUE_TIMEOUT_MS,
  });
  const ingest: IngestDeps = { pool: deps.pool, cache, batcher, logger, publicUrl: config.INGEST_PUBLIC_URL.replace(/\/+$/, ''), trustedProxies: deps.trustedProxies };
  let draining = false;

  if (deps.subscriber) {
    onConfigChange(deps.subscriber, config.QUEUE_PREFIX, (change) => cache.invalidate(change)).catch((err: Error) =>
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

  async function hook(req: IncomingMessage, res: ServerResponse, reqId: string, ingesterId: string, url: string): Promise<void> {
    const receivedAt = new Date();
    const q = url.indexOf('?');
    let body: Buffer;
    try {
      body = await readBody(req, config.PAYLOAD_LIMIT_BYTES);
    } catch (err) {
      if (err instanceof BodyTooLargeError) {
        res.setHeader('connection', 'close');
        throw new AppError('payload-too-large', `The body exceeds the limit of ${err.limit} bytes.`, { limit_bytes: err.limit });
      }
      throw err;
    }
    const outcome = await ingestEvent(ingest, {
      ingesterId,
      path: q >= 0 ? url.slice(0, q) : url,
      query: q >= 0 ? url.slice(q + 1) : null,
      headers: req.headers,
      body,
      peerIp: req.socket.remoteAddress,
      receivedAt,
      requestId: reqId,
    });
    if (outcome.kind === 'accepted') sendJson(res, 202, { event_id: outcome.eventId, status: 'accepted' }, { 'x-request-id': reqId });
    else sendJson(res, 200, { event_id: outcome.eventId, duplicate: true }, { 'x-request-id': reqId });
  }

  async function route(req: IncomingMessage, res: ServerResponse, reqId: string): Promise<void> {
    if (draining) res.setHeader('connection', 'close');
    const url = req.url ?? '/';
    const path = url.split('?', 1)[0]!;
    const method = req.method ?? 'GET';
    const only = (allowed: string): void => {
      if (method !== allowed && !(allowed === 'GET' && method === 'HEAD')) throw new AppError('method-not-allowed', `Use ${allowed} here.`, {}, { allow: allowed });
    };
    if (path === '/healthz') {
      only('GET');
      return sendJson(res, 200, { status: 'ok' }, { 'x-request-id': reqId });
    }
    if (path === '/readyz') {
      only('GET');
      return readiness(res, reqId);
    }
    const m = HOOK_PATH.exec(path);
    if (!m) throw new AppError('not-found', 'No such route.');
    only('POST');
    return hook(req, res, reqId, m[1]!, url);
  }

  const server = createServer((req, res) => {
    const reqId = requestId(req.headers['x-request-id']);
    route(req, res, reqId).catch((err: unknown) => {
      if (!(err instanceof AppError)) logger.error('unexpected error', { request_id: reqId, error: (err as Error).message, stack: (err as Error).stack });
      if (res.headersSent) res.destroy();
      else sendProblem(res, err, reqId);
    });
  });
  // A slow or stalled client must not hold a socket for ever.
  server.requestTimeout = 30_000;
  server.headersTimeout = 15_000;

  return {
    server,
    cache,
    batcher,
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
