import type { Redis } from './redis';

/**
 * Destination health shared by every deliverer replica (written by the deliverer, read by
 * the API's `/v1/targets/{id}/health`). Key layout, under the queue prefix:
 *
 *   <prefix>:dst-health:<destination id>   hash
 *     state            closed | open | half_open (missing = closed)
 *     failures         consecutive failed attempts
 *     opened_at        ms epoch when the circuit last opened
 *     probe_until      ms epoch until which a half-open probe is in flight
 *     probe_holder     the delivery holding that probe, when an edge poll took it (only
 *                      that delivery's give-back frees the slot early)
 *     failing_since    ms epoch of the first failure after the last success
 *     last_error       short text of the last failure (error kind: message)
 *     last_error_at    ms epoch
 *     last_success_at  ms epoch
 *   <prefix>:dst-rate:<destination id>:<epoch second>   counter, the rate-limit window
 *                      (requests sent: the deliverer takes a token as each request leaves)
 *   <prefix>:dst-admit:<destination id>:<epoch second>   counter, deliveries the deliverer's
 *                      claim-time gate let into its send queue in that second (admission)
 *   <prefix>:dst-rate-spent:<destination id>:<epoch second>   hash, lease owner → tokens an
 *                      edge poll took in that window (returned when given back unsent)
 */
export function destinationHealthKey(prefix: string, destinationId: string): string {
  return `${prefix}:dst-health:${destinationId}`;
}

export function destinationRateKey(prefix: string, destinationId: string, epochSecond: number): string {
  return `${prefix}:dst-rate:${destinationId}:${epochSecond}`;
}

export function destinationAdmitKey(prefix: string, destinationId: string, epochSecond: number): string {
  return `${prefix}:dst-admit:${destinationId}:${epochSecond}`;
}

export type BreakerState = 'closed' | 'open' | 'half_open';

export interface DestinationHealthState {
  destinationId: string;
  state: BreakerState;
  consecutiveFailures: number;
  lastError: string | null;
  lastErrorAt: Date | null;
  lastSuccessAt: Date | null;
  openedAt: Date | null;
  failingSince: Date | null;
}

function time(v: string | undefined): Date | null {
  return v ? new Date(Number(v)) : null;
}

export async function readDestinationHealthState(redis: Redis, prefix: string, destinationId: string): Promise<DestinationHealthState> {
  const h = await redis.hgetall(destinationHealthKey(prefix, destinationId));
  const state = h['state'] === 'open' || h['state'] === 'half_open' ? h['state'] : 'closed';
  return {
    destinationId,
    state,
    consecutiveFailures: Number(h['failures'] ?? 0),
    lastError: h['last_error'] ?? null,
    lastErrorAt: time(h['last_error_at']),
    lastSuccessAt: time(h['last_success_at']),
    openedAt: state === 'closed' ? null : time(h['opened_at']),
    failingSince: time(h['failing_since']),
  };
}

/** Forgets a destination's circuit (for example when a user re-enables it). */
export async function resetDestinationHealthState(redis: Redis, prefix: string, destinationId: string): Promise<void> {
  await redis.del(destinationHealthKey(prefix, destinationId));
}
