import { groupBy, splitGated, takeAdmissions, type Breaker, type DestinationSettings, type GateAnswer, type Gated as GatedOf } from '@hookline/delivery';
import type { Logger } from '@hookline/logger';
import type { Redis } from '@hookline/queues';
import type { ClaimedDelivery } from './claim-deliveries';
import type { CircuitView } from './circuit-view';
import type { RateTokens } from './rate-tokens';

export interface Prepared {
  d: ClaimedDelivery;
  settings: DestinationSettings;
  /**
   * How the claim-time gate let it through, when not plainly: as the `probe` of a
   * half-open circuit (sent whatever this process last heard of that circuit, and without
   * a rate token), or `unchecked` (Redis could not answer: fail open, and no check when it
   * leaves either).
   */
  admitted?: 'probe' | 'unchecked';
}

export interface GateDeps {
  redis: Redis;
  prefix: string;
  breaker: Breaker;
  logger: Logger;
}

/** `allowed` join the send queue; `deferred` (circuit open or over the admission rate) are due again after `delayMs`. */
export type Gated = GatedOf<Prepared>;

/**
 * Admission control when a chunk is claimed: per destination, asks the shared circuit
 * breaker and then, for a rate-limited destination, its admission counter (at most its
 * rate per second join the send queue: takeAdmissions) how many of the claimed deliveries
 * may be queued for sending. The others are spread over the following one-second windows
 * (splitGated, @hookline/delivery, which the edge path uses too). No rate token is taken
 * here: each request takes its own as it leaves (clearToSend). If Redis cannot answer,
 * everything goes (fail open): deliveries matter more than protection. The destinations
 * are asked at once: one after another, a chunk at fan-out 5 waited for five Redis round
 * trips before its first request.
 */
export async function gateDeliveries(deps: GateDeps, items: Prepared[], now = Date.now()): Promise<Gated> {
  const gated = await Promise.all([...groupBy(items, (i) => i.d.destinationId)].map(([destinationId, group]) => gateDestination(deps, destinationId, group, now)));
  return { allowed: gated.flatMap((g) => g.allowed), deferred: gated.flatMap((g) => g.deferred) };
}

async function gateDestination(deps: GateDeps, destinationId: string, group: Prepared[], now: number): Promise<Gated> {
  const settings = group[0]!.settings;
  try {
    const breaker = await deps.breaker.admit(destinationId, group.length, settings.timeoutMs + 5_000, now);
    const limit = settings.rateLimitPerSecond;
    const answer: GateAnswer = { breaker, rate: limit !== null && breaker.allowed > 0 ? await takeAdmissions(deps.redis, deps.prefix, destinationId, limit, breaker.allowed, now) : null };
    const gated = splitGated(group, answer, limit, now);
    // retryAt is 0 only while the circuit is closed: otherwise what it let through is its probe.
    return breaker.retryAt === 0 ? gated : { ...gated, allowed: gated.allowed.map((p) => ({ ...p, admitted: 'probe' as const })) };
  } catch (err) {
    deps.logger.warn('destination gate unavailable, sending without it', { destination_id: destinationId, error: (err as Error).message });
    return { allowed: group.map((p) => ({ ...p, admitted: 'unchecked' as const })), deferred: [] };
  }
}

export interface ClearDeps {
  circuits: CircuitView;
  rateTokens: RateTokens;
}

/**
 * Whether a request may leave now (`now`: ms epoch), asked inside its destination's
 * concurrency slot after whatever time it waited there (where its signature is made, for
 * the same reason), before it takes an overall slot (a Redis call that stalls must not
 * hold one: http-sender.ts): the destination's circuit as this process last heard it (in
 * memory), then, only for a rate-limited destination, one token of the current one-second
 * window (one Redis call; rate-tokens.ts). Null: send. Otherwise when the delivery is due
 * again; it is given back unsent. Redis unreachable: sent (fail open, as at claim time).
 *
 * A half-open circuit's probe is asked neither: the circuit let it through, and it takes
 * no rate token. Refused one, it would be given back while its probe slot in Redis stays
 * taken for the probe's lease (the deliverer names no holder that could free it), and the
 * destination would wait that long plus a cooldown for the next probe. It is one request:
 * its destination may get one more than its rate limit in that second.
 */
export async function clearToSend(deps: ClearDeps, p: Prepared, now: number): Promise<number | null> {
  if (p.admitted !== undefined) return null;
  const heldUntil = deps.circuits.heldUntil(p.d.destinationId);
  if (heldUntil !== null) return heldUntil;
  const limit = p.settings.rateLimitPerSecond;
  if (limit === null) return null;
  const rate = await deps.rateTokens.take(p.d.destinationId, limit, now);
  return rate === null || rate.allowed > 0 ? null : rate.nextWindowAt;
}
