import type { Logger } from '@hookline/logger';
import { coalesced, withTryLock, type Pool } from '@hookline/db';
import type { EvidenceKey } from './evidence-key';
import { issueReceipts, type SkippedAttempt } from './issue-receipts';
import { sealDueWindows } from './seal-window';

export interface SealerDeps {
  pool: Pool;
  logger: Logger;
  key: EvidenceKey;
  windowMs: number;
  graceMs: number;
  /**
   * The clock (tests pin it). Read inside each pass once its lock is held, and again for the
   * issue time of each batch of receipts, never when the pass was asked for.
   */
  now?: () => Date;
}

export interface SealerTick {
  issued: number;
  sealed: number;
}

export interface EvidenceSealer {
  /**
   * One issue + seal pass; null when another replica holds the lock. Asked for while a pass
   * runs, it answers the one pass that runs after it (however many ask meanwhile).
   */
  tick(): Promise<SealerTick | null>;
  stop(): Promise<void>;
}

// An attempt's id is minted (on the writer's clock) just before the statement that inserts
// it, so it commits moments later. Each pass looks back LOOKBACK_MS past the previous pass,
// which covers slow commits and clock skew between replicas; every SWEEP_EVERY_MS a pass
// looks back SWEEP_EVERY_MS past the previous sweep, for the rare attempt that committed
// later (up to 10 minutes after its id was minted). A pass scans every attempt in its
// range, so ranges stay short: a 10-minute lookback on every pass cost 17 % of
// PostgreSQL's time in the benchmark. Passes are frequent (EVIDENCE_SEAL_INTERVAL_MS, 2 s)
// so that each is small: a pass every 15 s was a CPU burst that stalled deliveries.
export const LOOKBACK_MS = 5_000;
export const SWEEP_EVERY_MS = 10 * 60_000;
/**
 * The most recent attempt ids of the previous pass kept in memory (about 90 bytes each) so
 * that the next pass does not look them up again: its range overlaps the previous one, and
 * each attempt was probed three to four times. Sweeps look everything up.
 */
export const MAX_COVERED_IDS = 100_000;

/** The newest pages of attempt ids of one pass, at most `max` ids (a larger page is not kept). */
export function coveredIds(max: number): { add(ids: string[]): void; set(): Set<string> } {
  const pages: string[][] = [];
  let count = 0;
  return {
    add(ids) {
      pages.push(ids);
      count += ids.length;
      while (count > max && pages.length) count -= pages.shift()!.length;
    },
    set: () => new Set(pages.flat()),
  };
}

/**
 * Issues receipts for new delivery attempts and seals windows that have ended, every
 * `intervalMs`, under an advisory lock so one replica works at a time. The first
 * pass scans every attempt (catching up after downtime); later passes look back
 * `LOOKBACK_MS` past the previous pass, and every `SWEEP_EVERY_MS` past the previous sweep.
 * A timer tick that finds a pass running is skipped: a slow pass is never followed by a
 * queue of passes, each stamping receipts with the time it was queued.
 */
export function startEvidenceSealer(deps: SealerDeps, intervalMs: number): EvidenceSealer {
  const clock = deps.now ?? (() => new Date());
  let lastPass: Date | null = null;
  let lastSweep: Date | null = null;
  let covered = new Set<string>();
  let stopped = false;

  // The lock is a transaction-scoped one held by an open transaction on its own
  // connection for the whole pass (the pass's statements run on other connections): a
  // pooler in transaction mode (PgBouncer) keeps that server connection for the
  // transaction, where a session lock could be taken on one server connection and
  // "released" on another, and then never released.
  const pass = (): Promise<SealerTick | null> =>
    withTryLock(deps.pool, 'hookline-evidence-sealer', async () => {
      // Read now, under the lock: the previous holder (here or on another replica) is done.
      const now = clock();
      const sweep = !lastSweep || now.getTime() - lastSweep.getTime() >= SWEEP_EVERY_MS;
      const from = sweep ? lastSweep && lastSweep.getTime() - SWEEP_EVERY_MS : lastPass && lastPass.getTime() - LOOKBACK_MS;
      const since = from ? new Date(from) : undefined;
      const seen = coveredIds(MAX_COVERED_IDS);
      // A sweep looks every attempt of its range up: it is the backstop.
      const issued = await issueReceipts(deps.pool, deps.key, { since, clock, covered: sweep ? undefined : covered, onCovered: seen.add, onSkipped: skipped });
      covered = seen.set();
      const roots = await sealDueWindows(deps.pool, deps.key, { windowMs: deps.windowMs, before: new Date(now.getTime() - deps.graceMs) });
      lastPass = now;
      if (sweep) lastSweep = now;
      return { issued, sealed: roots.length };
    });

  // Logged at each full scan that meets it (the first pass, the sweeps over its range).
  const skipped = (a: SkippedAttempt): void => {
    deps.logger.error('an attempt has no evidence receipt: its times cannot be stated in one (a year outside 1-9999)', { ...a });
  };

  const passes = coalesced(pass);
  const tick = (): Promise<SealerTick | null> => passes.request();

  const timer = setInterval(() => {
    if (stopped || passes.busy()) return;
    tick().then(
      (t) => t && (t.issued || t.sealed) && deps.logger.info('evidence sealed', { ...t }),
      (err: Error) => deps.logger.error('evidence sealer pass failed', { err: err.message }),
    );
  }, intervalMs);
  timer.unref();

  return {
    tick,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await passes.settled();
    },
  };
}
