import { compileFilter, type CompiledFilter } from '@hookline/filters';
import type { Pool } from '@hookline/db';
import type { ConfigChange } from '@hookline/queues';

export interface ActiveFlow {
  id: string;
  tenantId: string;
  ingesterId: string;
  destinationId: string;
  /**
   * False while the destination is DISABLED: the flow still routes (SPEC.md: a disabled
   * destination stops delivery, it does not drop events), and its deliveries are held,
   * pending, until the destination is enabled again (then sent) or deleted (then DLQ).
   */
  destinationActive: boolean;
  /** True for an empty filter: the event body need not even be parsed. */
  matchAll: boolean;
  filter: CompiledFilter;
}

/** What the router needs to know about one ingester's flows. */
export interface IngesterFlows {
  /** The flows that route: ACTIVE flows to an ACTIVE or DISABLED destination. */
  flows: ActiveFlow[];
  /**
   * The tenant of the ingester's switched-off flows (DRAFT or DISABLED, to a destination
   * that is not DELETED) when it has no flow that routes, else null: an event it routes
   * nowhere is then marked `flow_not_active` rather than `no_matching_flow`.
   */
  switchedOffTenant: string | null;
  /**
   * The ingester's own filter (ingesters.filters), compiled once per cache fill, which every
   * event must pass before any of `flows` is tried; null when it has none (or `{}`). Read only
   * when the ingester has flows that route (otherwise no filter runs anyway). An invalid one
   * matches nothing (fail closed), like a flow's.
   */
  ingesterFilter: CompiledFilter | null;
}

interface Entry extends IngesterFlows {
  tenantId: string;
  expiresAt: number;
}

interface FlowRow {
  id: string;
  tenant_id: string;
  ingester_id: string;
  destination_id: string;
  /** Only for flows that route (the others' filters are never compiled). */
  filter: unknown;
  /** The ingester's filters, likewise only on rows of flows that route. */
  ingester_filters: unknown;
  routes: boolean;
  /** A DRAFT or DISABLED flow. */
  switched_off: boolean;
  destination_active: boolean;
}

// Flows of the same tenant as their destination (defence in depth). A flow routes when it
// is ACTIVE and its destination ACTIVE or DISABLED (held deliveries); DRAFT and DISABLED
// flows are read only to tell "switched off" from "no flow" (by the (ingester_id, state)
// index, as before; one query per cache miss, none per event). The ingester's own filters
// come along on the rows of flows that route (by its primary key), in the same statement.
const LOAD_FLOWS = `SELECT f.id, f.tenant_id, f.ingester_id, f.destination_id,
    CASE WHEN f.state = 'ACTIVE' THEN f.filter END AS filter,
    CASE WHEN f.state = 'ACTIVE' THEN i.filters END AS ingester_filters,
    (f.state = 'ACTIVE' AND d.state IN ('ACTIVE', 'DISABLED')) AS routes,
    (f.state <> 'ACTIVE') AS switched_off,
    (d.state = 'ACTIVE') AS destination_active
  FROM delivery_flows f JOIN destinations d ON d.id = f.destination_id AND d.tenant_id = f.tenant_id
  LEFT JOIN ingesters i ON i.id = f.ingester_id
  WHERE f.ingester_id = ANY($1::text[]) AND f.state IN ('ACTIVE', 'DISABLED', 'DRAFT') AND d.state <> 'DELETED'
  ORDER BY f.id`;

const NO_FLOWS: IngesterFlows = { flows: [], switchedOffTenant: null, ingesterFilter: null };

// Below this many entries expired ones are left to be replaced when seen again.
const MIN_PRUNE_SIZE = 1024;

/**
 * The flows that route, per ingester, with compiled filters (the flows' and the ingester's
 * own), cached for `ttlMs`. A config-change message drops the entries it may affect (an
 * `ingester` one, which every ingester write announces, its ingester's entry, filters
 * included); a load that raced with one is used once but not kept.
 */
export class FlowCache {
  private readonly entries = new Map<string, Entry>();
  private generation = 0;
  /** When expired entries are dropped next (an ingester seen once must not stay for ever). */
  private nextPruneAt = 0;

  constructor(
    private readonly pool: Pool,
    private readonly ttlMs: number,
    /** A stored filter that does not compile: a flow's (`id` a flow id) or an ingester's. */
    private readonly onInvalidFilter: (id: string, errors: CompiledFilter['errors'], kind: 'flow' | 'ingester') => void = () => undefined,
    private readonly now: () => number = Date.now,
  ) {}

  /** The flows that route, per ingester (`tenantOf` maps ingester → tenant). */
  async get(tenantOf: Map<string, string>): Promise<Map<string, ActiveFlow[]>> {
    const out = new Map<string, ActiveFlow[]>();
    for (const [ingesterId, e] of await this.lookup(tenantOf)) out.set(ingesterId, e.flows);
    return out;
  }

  /** Flows of each ingester and whether it has only switched-off ones; misses are read in one query. */
  async lookup(tenantOf: Map<string, string>): Promise<Map<string, IngesterFlows>> {
    const out = new Map<string, IngesterFlows>();
    const missing: string[] = [];
    const t = this.now();
    for (const ingesterId of tenantOf.keys()) {
      const e = this.entries.get(ingesterId);
      if (e && e.expiresAt > t) out.set(ingesterId, e);
      else missing.push(ingesterId);
    }
    if (missing.length === 0) return out;

    const generation = this.generation;
    const { rows } = await this.pool.query<FlowRow>(LOAD_FLOWS, [missing]);
    const loaded = new Map<string, IngesterFlows>();
    for (const r of rows) {
      const e = loaded.get(r.ingester_id) ?? { flows: [], switchedOffTenant: null, ingesterFilter: null };
      loaded.set(r.ingester_id, e);
      if (r.routes) {
        // Every row of the ingester carries the same filters: compiled at its first flow that routes.
        if (e.flows.length === 0) e.ingesterFilter = this.compileIngesterFilter(r.ingester_id, r.ingester_filters);
        e.flows.push(this.compile(r));
      } else if (r.switched_off) e.switchedOffTenant ??= r.tenant_id;
    }
    const keep = generation === this.generation;
    for (const ingesterId of missing) {
      const found = loaded.get(ingesterId);
      const e: IngesterFlows = !found ? NO_FLOWS : found.flows.length > 0 ? { ...found, switchedOffTenant: null } : found;
      out.set(ingesterId, e);
      if (keep) this.entries.set(ingesterId, { ...e, tenantId: tenantOf.get(ingesterId) ?? '', expiresAt: this.now() + this.ttlMs });
    }
    if (this.entries.size > MIN_PRUNE_SIZE && t >= this.nextPruneAt) this.prune();
    return out;
  }

  /** Entries held, live or expired. */
  get size(): number {
    return this.entries.size;
  }

  /** Drops expired entries, at most once per TTL: a walk of the map per few seconds, not per job. */
  private prune(): void {
    const t = this.now();
    for (const [id, e] of this.entries) if (e.expiresAt <= t) this.entries.delete(id);
    this.nextPruneAt = t + Math.max(this.ttlMs, 1000);
  }

  /** Drops what a configuration change may have made stale. */
  invalidate(change: ConfigChange): void {
    this.generation++;
    if (change.kind === 'ingester') {
      this.entries.delete(change.id);
      return;
    }
    // A flow or destination change can add or remove flows of any ingester of the tenant.
    for (const [id, e] of this.entries) if (e.tenantId === change.tenantId) this.entries.delete(id);
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }

  private compile(r: FlowRow): ActiveFlow {
    const filter = compileFilter(r.filter);
    if (!filter.valid) this.onInvalidFilter(r.id, filter.errors, 'flow');
    const matchAll = isEmptyFilter(r.filter);
    return { id: r.id, tenantId: r.tenant_id, ingesterId: r.ingester_id, destinationId: r.destination_id, destinationActive: r.destination_active, matchAll: matchAll && filter.valid, filter };
  }

  /** null for no filter (NULL or `{}`): nothing to run per event. */
  private compileIngesterFilter(ingesterId: string, filters: unknown): CompiledFilter | null {
    if (isEmptyFilter(filters)) return null;
    const filter = compileFilter(filters, 'filters');
    if (!filter.valid) this.onInvalidFilter(ingesterId, filter.errors, 'ingester');
    return filter;
  }
}

/** NULL or `{}`: every event matches, and its body need not even be parsed. */
function isEmptyFilter(f: unknown): boolean {
  return f === null || f === undefined || (typeof f === 'object' && !Array.isArray(f) && Object.keys(f).length === 0);
}
