import { AppError } from '@hookline/errors';

/**
 * What a cluster key can do, in control-API scopes. An edge agent holding it receives each
 * leased delivery whole: the event's body (read:events), the destination's URL and
 * credential headers, which no API scope shows (write:destinations, the scope that sets
 * them), and reports outcomes that are recorded as attempts (write:deliveries). So issuing
 * one (enrolling a cluster, rotating its key) takes all of them besides write:clusters, as an
 * API key or MCP key can only be given what its creator could do (api-keys, mcp-grants.ts).
 */
export const CLUSTER_KEY_NEEDS = ['write:destinations', 'read:events', 'write:deliveries'] as const;

/** 403 insufficient-scope naming the first scope missing (`required_scope`) and all of them (`missing_scopes`). */
export function assertMayIssueClusterKey(held: ReadonlySet<string>): void {
  const missing = CLUSTER_KEY_NEEDS.filter((s) => !held.has(s));
  if (!missing.length) return;
  throw new AppError(
    'insufficient-scope',
    `A cluster key receives event bodies and destination credentials and reports deliveries: issuing one takes ${CLUSTER_KEY_NEEDS.join(', ')} besides write:clusters; this credential lacks ${missing.join(', ')}.`,
    { required_scope: missing[0], missing_scopes: missing },
  );
}
