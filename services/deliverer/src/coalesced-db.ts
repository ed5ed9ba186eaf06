import type { Pool } from '@hookline/db';
import { createCoalescer, newLeaseOwner, recordOwnedOutcomes, type OwnedOutcomes } from '@hookline/delivery';
import { claimDeliveries, type ClaimedDelivery } from './claim-deliveries';

export interface Claim {
  leaseOwner: string;
  claimed: ClaimedDelivery[];
}

export interface CoalescedDb {
  /** Claims the due deliveries among `ids`; concurrent jobs share one statement. */
  claim(ids: string[]): Promise<Claim>;
  /** Records one job's outcomes; concurrent jobs share one transaction. */
  record(owned: OwnedOutcomes): Promise<void>;
}

export interface CoalesceSettings {
  leaseMs: number;
  claimSlackMs: number;
  instanceId: string;
  /** Statements of each kind at once; calls beyond wait and are merged into the next. */
  maxInFlight: number;
  /** Jobs merged into one statement at most. */
  maxJobs: number;
}

/**
 * Group commit for the deliverer's two hot statements. Under load the per-job fixed cost
 * of a claim and of the outcome call (a planned statement each) is the bottleneck,
 * not the rows: merging the jobs that are waiting anyway cuts the statements per delivery.
 * A lone job runs at once.
 */
export function createCoalescedDb(pool: Pool, s: CoalesceSettings): CoalescedDb {
  const claim = createCoalescer<string[], Claim>(
    async (inputs) => {
      const leaseOwner = newLeaseOwner(s.instanceId);
      const rows = await claimDeliveries(pool, { deliveryIds: [...new Set(inputs.flat())], leaseOwner, leaseMs: s.leaseMs, slackMs: s.claimSlackMs });
      const byId = new Map(rows.map((r) => [r.id, r]));
      // Two jobs naming the same delivery: the first one gets it.
      return inputs.map((ids) => {
        const claimed: ClaimedDelivery[] = [];
        for (const id of ids) {
          const row = byId.get(id);
          if (row) {
            claimed.push(row);
            byId.delete(id);
          }
        }
        return { leaseOwner, claimed };
      });
    },
    s.maxInFlight,
    s.maxJobs,
  );
  const record = createCoalescer<OwnedOutcomes, void>(
    async (groups) => {
      await recordOwnedOutcomes(pool, groups);
      return groups.map(() => undefined);
    },
    s.maxInFlight,
    s.maxJobs,
  );
  return { claim, record };
}
