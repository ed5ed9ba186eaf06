import { compileFilter, type CompiledFilter } from '@hookline/filters';
import type { Pool } from '@hookline/db';
import type { ConfigChange } from '@hookline/queues';

export interface ActiveFlow {
  id: string;
  tenantId: string;
  ingesterId: string;
  destinationId: string;
  /** True for an empty filter: the event body need not even be parsed. */
  matchAll: boolean;
  filter: CompiledFilter;
}

interface Entry {
  tenantId: string;
  flows: ActiveFlow[];
  expiresAt: number;
}

interface FlowRow {
  id: string;
  tenant_id: string;
  ingester_id: string;
  destination_id: string;
  filter: unknown;
}

// Flows and destinations must both be ACTIVE, and of the same tenant (defence in depth).
const LOAD_FLOWS = `SELECT f.id, f.tenant_id, f.ingester_id, f.destination_id, f.filter
  FROM delivery_flows f JOIN destinations d ON d.id = f.destination_id AND d.tenant_id = f.tenant_id
  WHERE f.ingester_id = ANY($1::text[]) AND f.state = 'ACTIVE' AND d.state = 'ACTIVE'
  ORDER BY f.id`;

// Below this many entries expired ones are left to be replaced when seen again.
const MIN_PRUNE_SIZE = 1024;

/**
 * Active flows per ingester, with compiled filters, cached for `ttlMs`. A config-change
 * message drops the entries it may affect; a load that raced with one is used once but
 * not kept.
 */
export class FlowCache {
  private readonly entries = new Map<string, Entry>();
  private generation = 0;
  /** When expired entries are dropped next (an ingester seen once must not stay for ever). */
  private nextPruneAt = 0;

  constructor(
    private readonly pool: Pool,
    private readonly ttlMs: number,
    private readonly onInvalidFilter: (flowId: string, errors: CompiledFilter['errors']) => void = () => undefined,
    private readonly now: () => number = Date.now,
  ) {}

  /** Flows of each ingester (`tenantOf` maps ingester → tenant); misses are read in one query. */
  async get(tenantOf: Map<string, string>): Promise<Map<string, ActiveFlow[]>> {
    const out = new Map<string, ActiveFlow[]>();
    const missing: string[] = [];
    const t = this.now();
    for (const ingesterId of tenantOf.keys()) {
      const e = this.entries.get(ingesterId);
      if (e && e.expiresAt > t) out.set(ingesterId, e.flows);
      else missing.push(ingesterId);
    }
    if (missing.length === 0) return out;

    const generation = this.generation;
    const { rows } = await this.pool.query<FlowRow>(LOAD_FLOWS, [missing]);
    const loaded = new Map<string, ActiveFlow[]>(missing.map((id) => [id, []]));
    for (const r of rows) loaded.get(r.ingester_id)?.push(this.compile(r));
    const keep = generation === this.generation;
    for (const [ingesterId, flows] of loaded) {
      out.set(ingesterId, flows);
      if (keep) this.entries.set(ingesterId, { tenantId: tenantOf.get(ingesterId) ?? '', flows, expiresAt: this.now() + this.ttlMs });
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
    if (!filter.valid) this.onInvalidFilter(r.id, filter.errors);
    const f = r.filter;
    const matchAll = f === null || (typeof f === 'object' && !Array.isArray(f) && Object.keys(f).length === 0);
    return { id: r.id, tenantId: r.tenant_id, ingesterId: r.ingester_id, destinationId: r.destination_id, matchAll: matchAll && filter.valid, filter };
  }
}
