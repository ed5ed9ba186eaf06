import { hostname } from 'node:os';
import type { Pool } from '@hookline/db';
import { breakerOptions, createBreaker, createSecretCache, deliveryPolicy } from '@hookline/delivery';
import type { Logger } from '@hookline/logger';
import type { Producer, Redis } from '@hookline/queues';
import { createSecretBox } from '@hookline/signing';
import { viewCircuits } from './circuit-view';
import { ClaimShares } from './claim-shares';
import { createCoalescedDb } from './coalesced-db';
import { parseList, type DelivererConfig } from './config';
import { CLAIM_CHUNK, type DeliverDeps } from './deliver-batch';
import { createHttpSender } from './http-sender';
import { Limiter } from './limiter';
import { redisRateTokens } from './rate-tokens';
import { createSsrfGuard, type Resolver } from './ssrf/ssrf-guard';

export interface Resources {
  pool: Pool;
  /** Non-blocking connection (role 'producer') for the breaker and rate-limit scripts. */
  redis: Redis;
  producer: Producer;
  logger: Logger;
  /** Tests inject a resolver; production uses the system one. */
  resolver?: Resolver;
}

/** Turns validated config and open connections into what `deliverBatch` needs. */
export function buildDeliverDeps(config: DelivererConfig, r: Resources): DeliverDeps {
  const guard = createSsrfGuard(parseList(config.SSRF_ALLOWLIST), r.resolver);
  const instanceId = `${hostname()}:${process.pid}`;
  const shares = { destination: config.DELIVERER_DESTINATION_MAX_SHARE, tenant: config.DELIVERER_TENANT_MAX_SHARE };
  const { breaker, circuits } = viewCircuits(createBreaker(r.redis, breakerOptions(config, config.QUEUE_PREFIX)), config.BREAKER_COOLDOWN_MS);
  return {
    pool: r.pool,
    db: createCoalescedDb(r.pool, {
      leaseMs: config.DELIVERY_LEASE_MS,
      claimSlackMs: config.CLAIM_SLACK_MS,
      instanceId,
      maxInFlight: config.DELIVERER_DB_IN_FLIGHT,
      maxJobs: config.DELIVERER_CONCURRENCY,
    }),
    claimBudget: new Limiter(config.DELIVERER_MAX_CLAIMED),
    claimShares: new ClaimShares({ maxClaimed: config.DELIVERER_MAX_CLAIMED, maxInFlight: config.DELIVERER_MAX_IN_FLIGHT, shares, chunk: CLAIM_CHUNK }),
    redis: r.redis,
    producer: r.producer,
    prefix: config.QUEUE_PREFIX,
    logger: r.logger,
    sender: createHttpSender({ guard, responseBodyLimit: config.RESPONSE_BODY_LIMIT, maxInFlight: config.DELIVERER_MAX_IN_FLIGHT, shares }),
    breaker,
    circuits,
    rateTokens: redisRateTokens(r.redis, config.QUEUE_PREFIX, r.logger),
    openSecret: createSecretCache(createSecretBox(config.SECRETS_KEY)),
    ...deliveryPolicy(config),
    leaseMs: config.DELIVERY_LEASE_MS,
    recordLingerMs: config.DELIVERER_RECORD_LINGER_MS,
    claimSlackMs: config.CLAIM_SLACK_MS,
    disableAfterMs: config.DESTINATION_DISABLE_AFTER_MS,
    instanceId,
  };
}
