import type { Breaker } from '@hookline/delivery';

/** Destinations whose circuit is remembered as not closed, at most; beyond it the oldest is forgotten. */
const VIEWED_CIRCUITS_MAX = 10_000;

/**
 * The shared circuits (Redis) as this process last heard them, in memory: a request is
 * checked against it right before it leaves, without a round trip per request.
 */
export interface CircuitView {
  /**
   * Until when deliveries of the destination are held back (all but a half-open circuit's
   * probe), in ms epoch; null while its circuit is closed as far as this process knows.
   * The time may be past (cooldown over, no probe let through yet): held back until the
   * circuit answers again.
   */
  heldUntil(destinationId: string): number | null;
}

/**
 * Wraps the breaker so that every answer this process gets from a circuit updates its
 * view: each claim-time `admit` (closed; open until the cooldown ends; half-open, a probe
 * let through) and each health `record` (closed, or open since `openedAt`). A circuit
 * another replica opened is thus seen at this process's next admit or record for that
 * destination; one its own results open, right after they are recorded.
 */
export function viewCircuits(breaker: Breaker, cooldownMs: number, max = VIEWED_CIRCUITS_MAX): { breaker: Breaker; circuits: CircuitView } {
  const notClosed = new Map<string, number>();
  const heard = (destinationId: string, heldUntil: number | null): void => {
    notClosed.delete(destinationId);
    if (heldUntil === null) return;
    notClosed.set(destinationId, heldUntil);
    if (notClosed.size > max) notClosed.delete(notClosed.keys().next().value!);
  };
  return {
    breaker: {
      ...breaker,
      async admit(destinationId, wanted, probeLeaseMs, now = Date.now(), probeHolder = '') {
        const answer = await breaker.admit(destinationId, wanted, probeLeaseMs, now, probeHolder);
        // retryAt is 0 only while the circuit is closed.
        heard(destinationId, answer.retryAt === 0 ? null : answer.retryAt);
        return answer;
      },
      async record(destinationId, outcome, now = Date.now()) {
        const after = await breaker.record(destinationId, outcome, now);
        heard(destinationId, after.state === 'closed' ? null : (after.openedAt ?? now) + cooldownMs);
        return after;
      },
    },
    circuits: { heldUntil: (destinationId) => notClosed.get(destinationId) ?? null },
  };
}
