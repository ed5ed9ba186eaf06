import type { Breaker, GateAnswer } from './circuit-breaker';
import type { DestinationSettings } from './destination-settings';

export function groupBy<T>(items: T[], key: (t: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const i of items) {
    const k = key(i);
    const list = out.get(k);
    if (list) list.push(i);
    else out.set(k, [i]);
  }
  return out;
}

export interface Gated<T> {
  allowed: T[];
  /** Not sent now (circuit open or over the rate limit): due again after `delayMs`. */
  deferred: { item: T; delayMs: number }[];
}

/**
 * One destination's deliveries split by what its circuit and then its rate limit let
 * through: the first `allowed` go, the ones the circuit holds back come back when it
 * answers (`retryAt`), and those over the rate limit are spread over the following
 * one-second windows, `limit` per window. Both paths (the deliverer's gate and the edge
 * lease) decide the delays here.
 */
export function splitGated<T>(group: T[], answer: GateAnswer, limit: number | null, now: number): Gated<T> {
  const b = answer.breaker;
  const deferred = group.slice(b.allowed).map((item) => ({ item, delayMs: Math.max(0, b.retryAt - now) }));
  let pass = b.allowed;
  const r = answer.rate;
  if (limit !== null && r && pass > 0) {
    group.slice(r.allowed, pass).forEach((item, k) => deferred.push({ item, delayMs: r.nextWindowAt - now + Math.floor(k / limit) * 1000 }));
    pass = r.allowed;
  }
  return { allowed: group.slice(0, pass), deferred };
}

export interface GateItem {
  destinationId: string;
  settings: DestinationSettings;
  /**
   * The delivery (edge path): the one that takes a half-open circuit's probe slot is noted
   * as its holder, so that only it, given back unsent, frees the slot (Breaker.giveBack).
   */
  deliveryId?: string;
}

/**
 * The circuit breaker and rate limit of every destination of a batch, asked in one script
 * call (one Redis round trip; the deliverer's gate asks per destination, concurrently).
 * `probeLeaseMs` is how long a half-open probe of that destination counts as in flight.
 * A probe is the first of its destination's group (splitGated lets the first `allowed`
 * through), so that one is named as the probe slot's holder. The rate tokens taken are
 * noted for `leaseOwner`, so that what it gives back unsent returns them (Breaker.giveBack).
 * Throws when Redis cannot answer: the caller decides (both paths then send: fail open).
 */
export async function gateAtOnce<T extends GateItem>(breaker: Breaker, items: T[], probeLeaseMs: (settings: DestinationSettings) => number, now = Date.now(), leaseOwner = ''): Promise<Gated<T>> {
  const groups = [...groupBy(items, (i) => i.destinationId)];
  const answers = await breaker.gateMany(
    groups.map(([destinationId, group]) => ({
      destinationId,
      wanted: group.length,
      probeLeaseMs: probeLeaseMs(group[0]!.settings),
      rateLimitPerSecond: group[0]!.settings.rateLimitPerSecond,
      probeHolder: group[0]!.deliveryId,
    })),
    now,
    leaseOwner,
  );
  const gated = groups.map(([, group], i) => splitGated(group, answers[i]!, group[0]!.settings.rateLimitPerSecond, now));
  return { allowed: gated.flatMap((g) => g.allowed), deferred: gated.flatMap((g) => g.deferred) };
}
