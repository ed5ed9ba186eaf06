/**
 * A query config that node-postgres abandons after `ms` (`query_timeout`): the call
 * rejects and the pool drops the connection. A request must be answered 503 when
 * PostgreSQL stops answering (a stalled primary, a partition), not wait for ever: the
 * pool's connect timeout covers only new connections. Without `ms`, the query unchanged.
 */
export function withTimeout<Q extends { text: string }>(query: Q, ms: number | undefined): Q {
  return ms ? { ...query, query_timeout: ms } : query;
}
