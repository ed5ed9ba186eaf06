// The bench receiver's per-phase counting (pure, so that it is unit-tested): each request
// is attributed to the phase whose tag its body carries, and a second request with the
// same idempotency key in that phase is a duplicate, not a delivery.

/** The tag every bench event body starts with (load.ts eventBody). */
export const PHASE_FIELD = 'bench_phase';
const TAG = /"bench_phase":"([A-Za-z0-9_.:-]{1,64})"/;

/** The phase tag in the first bytes of a body, or null. */
export function phaseTagOf(head: string): string | null {
  return TAG.exec(head)?.[1] ?? null;
}

export interface PhaseCounts {
  /** Every request carrying the phase's tag, duplicates included. */
  received: number;
  /** Distinct deliveries: requests whose idempotency key was not seen before in the phase (or without a key). */
  unique: number;
  /** Requests repeating a key already seen in the phase. */
  duplicates: number;
  /** Requests without an idempotency key (counted as unique: they cannot be told apart). */
  noKey: number;
  /** True once the phase's keys were dropped (forget) or passed the cap: later requests count as unique. */
  dedupStopped: boolean;
}

interface Entry extends PhaseCounts {
  keys: Set<string> | null;
}

export class PhaseTally {
  private phases = new Map<string, Entry>();
  untagged = 0;

  constructor(private readonly maxKeys = 4_000_000) {}

  /** Counts one request; true when it is the first of its delivery (not a duplicate). */
  record(tag: string | null, key: string | undefined): boolean {
    if (tag === null) {
      this.untagged++;
      return false;
    }
    let e = this.phases.get(tag);
    if (!e) this.phases.set(tag, (e = { received: 0, unique: 0, duplicates: 0, noKey: 0, dedupStopped: false, keys: new Set() }));
    e.received++;
    if (key === undefined) {
      e.noKey++;
      e.unique++;
      return true;
    }
    if (e.keys) {
      if (e.keys.has(key)) {
        e.duplicates++;
        return false;
      }
      if (e.keys.size >= this.maxKeys) {
        e.keys = null;
        e.dedupStopped = true;
      } else e.keys.add(key);
    }
    e.unique++;
    return true;
  }

  counts(tag: string): PhaseCounts {
    const e = this.phases.get(tag);
    return e ? { received: e.received, unique: e.unique, duplicates: e.duplicates, noKey: e.noKey, dedupStopped: e.dedupStopped } : { received: 0, unique: 0, duplicates: 0, noKey: 0, dedupStopped: false };
  }

  /** Frees a finished phase's keys; its counts stay. */
  forget(tag: string): void {
    const e = this.phases.get(tag);
    if (e && e.keys) {
      e.keys = null;
      e.dedupStopped = true;
    }
  }
}
