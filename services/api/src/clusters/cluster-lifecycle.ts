import { randomBytes } from 'node:crypto';
import { AppError } from '@hookline/errors';
import { withTransaction, type Pool } from '@hookline/db';
import type { AppContext } from '../context';
import { announce, namesLockKey } from '../lib/config-writes';
import { refusal, TRANSITIONS, type LifecycleState, type Transition } from '../lifecycle/lifecycle';
import { readClusterStatus, type ClusterStatus } from '../edge/cluster-status';
import type { Cluster } from '../lib/models';
import { asModel } from '../lib/rows';

type Queryable = Pick<Pool, 'query'>;

/** grace_seconds of a rotation: the default, and the most a previous key may outlive it (7 days). */
export const DEFAULT_GRACE_SECONDS = 3600;
export const MAX_GRACE_SECONDS = 7 * 24 * 3600;

/** How many ids of the objects that still use a cluster a refused DELETE names, per kind. */
const NAMED_REFERENCES = 20;

export function newClusterKey(): string {
  return `hkc_${randomBytes(32).toString('base64url')}`;
}

/**
 * A cluster as a write left it: the row it wrote and its status (in_flight), read in the
 * write's transaction, so the answer needs no read after the commit (one failing there would
 * answer an error for an applied write: with Idempotency-Key, a rotation replayed as a 500).
 */
export interface WrittenCluster {
  row: Cluster;
  status: ClusterStatus | undefined;
}

async function withStatus(client: Queryable, row: Cluster): Promise<WrittenCluster> {
  return { row, status: (await readClusterStatus(client, [row])).get(row.id) };
}

/** Locks the cluster's row for the rest of the transaction; 404 when missing, another tenant's or DELETED. */
async function lockCluster(client: Queryable, tenantId: string, id: string): Promise<LifecycleState> {
  const { rows } = await client.query<{ state: LifecycleState }>(`SELECT state::text AS state FROM clusters WHERE id = $1 AND tenant_id = $2 FOR UPDATE`, [id, tenantId]);
  const state = rows[0]?.state;
  if (!state || state === 'DELETED') throw AppError.notFound('cluster');
  return state;
}

/**
 * What still points at the cluster: destinations (its agents deliver them) and ingesters
 * (grouped under it, BFF), DELETED ones aside, whatever their state: a DISABLED one could
 * be enabled again onto a cluster that no longer exists.
 */
async function references(client: Queryable, id: string): Promise<{ destinations: number; ingesters: number; destination_ids: string[]; ingester_ids: string[] }> {
  const { rows } = await client.query<{ destinations: number; ingesters: number; destination_ids: string[]; ingester_ids: string[] }>(
    `SELECT (SELECT count(*)::int FROM destinations WHERE cluster_id = $1 AND state <> 'DELETED') AS destinations,
            (SELECT count(*)::int FROM ingesters WHERE cluster_id = $1 AND state <> 'DELETED') AS ingesters,
            ARRAY(SELECT id FROM destinations WHERE cluster_id = $1 AND state <> 'DELETED' ORDER BY id LIMIT $2) AS destination_ids,
            ARRAY(SELECT id FROM ingesters WHERE cluster_id = $1 AND state <> 'DELETED' ORDER BY id LIMIT $2) AS ingester_ids`,
    [id, NAMED_REFERENCES],
  );
  return rows[0]!;
}

/**
 * disable (ACTIVE → DISABLED), enable (DISABLED → ACTIVE) or delete (DRAFT or DISABLED →
 * DELETED; an ACTIVE cluster is disabled first, as for every other kind). The edge agent
 * endpoints read the state on every request (edge-auth.ts), so a disable or a delete
 * refuses the cluster's agents from the next request on, whatever key they hold. A delete
 * is refused (409, naming them) while a destination or ingester that is not DELETED still
 * uses the cluster. It takes the destination and ingester name locks (config-writes.ts),
 * so it does not interleave with a create or update of either in the tenant, and drops the
 * previous key of a rotation.
 */
export async function changeClusterState(app: AppContext, tenantId: string, id: string, t: Exclude<Transition, 'apply'>): Promise<WrittenCluster> {
  const written = await withTransaction(app.pool, async (client) => {
    if (t === 'delete') {
      for (const kind of ['destination', 'ingester'] as const) await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [namesLockKey(kind, tenantId)]);
    }
    const state = await lockCluster(client, tenantId, id);
    if (!TRANSITIONS[t].from.includes(state)) throw refusal('cluster', t, state);
    if (t === 'delete') {
      const refs = await references(client, id);
      if (refs.destinations + refs.ingesters > 0) {
        throw new AppError(
          'conflict',
          `The cluster is still used by ${refs.destinations} destination(s) and ${refs.ingesters} ingester(s); move them off it (cluster_id) or delete them first.`,
          { current_state: state, ...refs },
        );
      }
    }
    const extra = t === 'delete' ? ', previous_key_encrypted = NULL, previous_key_expires_at = NULL' : '';
    const { rows } = await client.query<Record<string, unknown>>(`UPDATE clusters SET state = $2::"LifecycleState"${extra} WHERE id = $1 RETURNING *`, [id, TRANSITIONS[t].to]);
    return withStatus(client, asModel<Cluster>(rows[0]!));
  });
  await announce(app, { kind: 'cluster', id, tenantId });
  return written;
}

/**
 * Issues a new key (returned once by the caller, stored sealed with SECRETS_KEY). The key
 * it replaces stays valid for `graceSeconds` (database clock); 0 revokes it at once. One
 * previous key at most: a key already in its grace period is dropped. ACTIVE or DISABLED
 * clusters (rotate a disabled one before enabling it again after a leak).
 */
export async function rotateClusterKey(app: AppContext, tenantId: string, id: string, graceSeconds: number): Promise<WrittenCluster & { key: string }> {
  const key = newClusterKey();
  const written = await withTransaction(app.pool, async (client) => {
    await lockCluster(client, tenantId, id);
    // The right-hand sides read the row as it was: the current key becomes the previous one.
    const { rows } = await client.query<Record<string, unknown>>(
      `UPDATE clusters SET
         previous_key_encrypted = CASE WHEN $3::int > 0 THEN key_encrypted END,
         previous_key_expires_at = CASE WHEN $3::int > 0 THEN now() + $3::int * interval '1 second' END,
         key_encrypted = $2,
         key_rotated_at = now()
       WHERE id = $1
       RETURNING *`,
      [id, app.box.seal(key), graceSeconds],
    );
    return withStatus(client, asModel<Cluster>(rows[0]!));
  });
  await announce(app, { kind: 'cluster', id, tenantId });
  return { ...written, key };
}
