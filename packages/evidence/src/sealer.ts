import type { Logger } from '@hookline/logger';
import { coalesced, withTryLock, type Pool } from '@hookline/db';
import type { EvidenceKey } from './evidence-key';
import { issueMissingReceipts, issueReceipts, type BackstopStep, type SkippedAttempt } from './issue-receipts';
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
  /** Attempt ids the backstop reads per step (default BACKSTOP_IDS; tests lower it). */
  backstopIds?: number;
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
//
// Those ranges start from this process's clock, but an attempt's id is minted on the
// deliverer's: an attempt whose id is older than the range when it commits (a deliverer
// clock more than 10 minutes behind, or a commit delayed that long) is in no pass's range.
// The backstop covers every attempt whatever its id: at most every BACKSTOP_EVERY_MS a pass
// also reads the next BACKSTOP_IDS attempt ids (an index range of attempts and one of
// receipts; issueMissingReceipts) and issues the receipts missing among them; from the
// newest it starts over at the first, a round at most every SWEEP_EVERY_MS (the first pass's
// full scan counts as a round). A round takes SWEEP_EVERY_MS or, on a table of more than
// 10 × BACKSTOP_IDS attempts, a minute per BACKSTOP_IDS of them; an attempt that commits
// without a receipt is issued one by the end of the round after the one running then (at
// most two rounds). The regular passes and sweeps are unchanged.
export const LOOKBACK_MS = 5_000;
export const SWEEP_EVERY_MS = 10 * 60_000;
export const BACKSTOP_EVERY_MS = 60_000;
export const BACKSTOP_IDS = 50_000;
/**
 * The most recent attempt ids of the previous pass kept in memory (about 90 bytes each) so
 * that the next pass does not look them up again: its range overlaps the previous one, and
 * each attempt was probed three to four times. Sweeps look everything up.
 */
export const MAX_COVERED_IDS = 100_000;

// The time part of @hookline/db's ids: 10 characters of Crockford base32 (lower case) after the prefix.
const ID_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/** When an id says it was minted (milliseconds), or null when it has no time part. */
export function mintedAt(id: string): number | null {
  const time = id.slice(id.indexOf('_') + 1, id.indexOf('_') + 11);
  if (time.length !== 10) return null;
  let ms = 0;
  for (const c of time) {
    const v = ID_ALPHABET.indexOf(c);
    if (v < 0) return null;
    ms = ms * 32 + v;
  }
  return ms;
}

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
 * `LOOKBACK_MS` past the previous pass, and every `SWEEP_EVERY_MS` past the previous sweep;
 * at most every `BACKSTOP_EVERY_MS` a pass also takes the backstop's next step (the next
 * `BACKSTOP_IDS` attempt ids, round the whole table), for attempts whose id is older than
 * any of those ranges when they commit. A timer tick that finds a pass running is skipped:
 * a slow pass is never followed by a queue of passes, each stamping receipts with the time
 * it was queued.
 */
export function startEvidenceSealer(deps: SealerDeps, intervalMs: number): EvidenceSealer {
  const clock = deps.now ?? (() => new Date());
  let lastPass: Date | null = null;
  let lastSweep: Date | null = null;
  let covered = new Set<string>();
  let stopped = false;
  // The backstop: where its next step starts ('' = the first attempt id), when its last step
  // ran and when its current round began.
  let backstopAfter = '';
  let lastStep: Date | null = null;
  let roundStart: Date | null = null;
  const backstopIds = deps.backstopIds ?? BACKSTOP_IDS;

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
      // A sweep looks every attempt of its range up (no covered ids).
      const issued = await issueReceipts(deps.pool, deps.key, { since, clock, covered: sweep ? undefined : covered, onCovered: seen.add, onSkipped: skipped });
      covered = seen.set();
      const late = since ? await backstop(now) : firstRound(now);
      const roots = await sealDueWindows(deps.pool, deps.key, { windowMs: deps.windowMs, before: new Date(now.getTime() - deps.graceMs) });
      lastPass = now;
      if (sweep) lastSweep = now;
      return { issued: issued + late, sealed: roots.length };
    });

  // A full scan (the first pass) is a whole round of the backstop.
  const firstRound = (now: Date): number => {
    backstopAfter = '';
    lastStep = roundStart = now;
    return 0;
  };

  // The backstop's step, when one is due (see BACKSTOP_EVERY_MS); the receipts it issued. A
  // step that fails is logged and taken again at the next step's time: it does not stop
  // this pass's sealing.
  const backstop = async (now: Date): Promise<number> => {
    const t = now.getTime();
    if (lastStep && t - lastStep.getTime() < BACKSTOP_EVERY_MS) return 0;
    if (!backstopAfter && roundStart && t - roundStart.getTime() < SWEEP_EVERY_MS) return 0;
    lastStep = now;
    let step: BackstopStep;
    try {
      step = await issueMissingReceipts(deps.pool, deps.key, { after: backstopAfter, limit: backstopIds, clock, onSkipped: skipped });
    } catch (err) {
      deps.logger.error('evidence backstop step failed', { err: (err as Error).message, after: backstopAfter });
      return 0;
    }
    if (!backstopAfter) roundStart = now;
    backstopAfter = step.next;
    if (step.issued) {
      // Receipts no regular pass issued: an attempt id minted on a clock behind this one, or
      // a commit long after its id was minted.
      const minted = step.oldestMissing ? mintedAt(step.oldestMissing) : null;
      deps.logger.warn('evidence receipts issued by the backstop: attempts no regular pass found (a deliverer clock behind, or a late commit)', {
        issued: step.issued,
        missing: step.missing,
        oldest_attempt_id: step.oldestMissing,
        ...(minted !== null ? { oldest_minted_ms_ago: t - minted } : {}),
      });
    }
    return step.issued;
  };

  // Logged at each full scan that meets it (the first pass, the sweeps over its range, each
  // round of the backstop).
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
