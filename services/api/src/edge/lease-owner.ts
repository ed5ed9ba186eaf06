import { newLeaseOwner } from '@hookline/delivery';

// An edge lease names the cluster that took it: `edge@<cluster id>:<agent id>:<random>`
// (one per work poll, newLeaseOwner). Reports and releases prove ownership by the lease
// itself, not by the destination's current cluster: a destination moved to another cluster,
// or back to direct delivery, while an agent holds one of its deliveries, keeps that lease
// reportable by the cluster that took it (and by no other), so the attempt the agent made is
// recorded rather than lost and sent again. A cluster id has no ':' (`cls_<base32>`), so
// `edge@<cid>:` starts the leases of that cluster and of no other; an agent id may contain
// ':', so an agent's leases are `edge@<cid>:<agent id>:` followed by the random part alone
// (no ':').
//
// Before, the lease owner was `edge:<agent id>:<random>` and ownership was the destination's
// current cluster. Such leases (taken by an api replica older than this one, during a rolling
// upgrade) are still taken back that way, and only that way: the `edge:` and `edge@`
// prefixes never overlap, so a lease of the new form is never accepted by the old rule.
// The old rule can go once no older api runs (its leases last EDGE_LEASE_MS at most).

/** A new lease owner for one work poll of `agentId`, an agent of cluster `clusterId`. */
export function newEdgeLeaseOwner(clusterId: string, agentId: string): string {
  return newLeaseOwner(`edge@${clusterId}:${agentId}`);
}

/**
 * SQL: the lease `d.lease_owner` (delivery `d`, its destination `t`) was taken by the
 * cluster whose id is the parameter `cidParam`, of the tenant `tenant` (parameters, e.g.
 * `$2`). The caller also matches `d.lease_owner` to the owner the agent presents.
 */
export function leasedByClusterSql(d: string, t: string, cidParam: string, tenant: string): string {
  const cid = `${cidParam}::text`;
  return `(${t}.tenant_id = ${tenant} AND (
    left(${d}.lease_owner, length('edge@' || ${cid} || ':')) = 'edge@' || ${cid} || ':'
    OR (left(${d}.lease_owner, 5) = 'edge:' AND ${t}.cluster_id = ${cid})))`;
}

/**
 * SQL: the lease `d.lease_owner` was taken by agent `agentParam` of the cluster
 * `cidParam` (parameters): what follows that agent's prefix is the random part alone, so agent
 * `dc-1` does not match agent `dc-1:b`'s leases. Used with leasedByClusterSql.
 */
export function leasedByAgentSql(d: string, cidParam: string, agentParam: string): string {
  const [cid, agent] = [`${cidParam}::text`, `${agentParam}::text`];
  const prefix = `(CASE WHEN left(${d}.lease_owner, 5) = 'edge@' THEN 'edge@' || ${cid} || ':' || ${agent} || ':' ELSE 'edge:' || ${agent} || ':' END)`;
  return `(left(${d}.lease_owner, length(${prefix})) = ${prefix} AND strpos(substr(${d}.lease_owner, length(${prefix}) + 1), ':') = 0)`;
}
