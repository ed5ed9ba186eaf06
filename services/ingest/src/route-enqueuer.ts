export interface RouteEnqueuer {
  /** Committed event ids to route; they leave in a job within `lingerMs`. */
  add(eventIds: string[], traceparent: string | undefined): void;
  /** Sends what is gathered now and resolves when every send has settled. */
  drain(): Promise<void>;
}

export interface RouteEnqueuerOptions {
  /** How long the first id of a job waits for more; 0 sends each commit's ids at once. */
  lingerMs: number;
  /** A job is sent as soon as it has this many ids. */
  maxIds: number;
}

/**
 * Gathers the ids of several group commits into one `route` job. The cost of a job
 * (queue round trips, one router transaction, one deliver job and its claim and outcome
 * writes) is mostly fixed, and at moderate rates a commit holds only a few events, so
 * small jobs left the pipeline busy with overhead: waiting a few milliseconds for more
 * ids makes the jobs larger and the whole pipeline cheaper per event. Sending never
 * throws (`send` logs its failures; the router's recovery sweep finds events left unrouted).
 */
export function createRouteEnqueuer(send: (eventIds: string[], traceparent: string | undefined) => Promise<void>, opts: RouteEnqueuerOptions): RouteEnqueuer {
  let ids: string[] = [];
  let traceparent: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  const sending = new Set<Promise<void>>();

  const flush = (): void => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (ids.length === 0) return;
    const p = send(ids, traceparent).finally(() => sending.delete(p));
    sending.add(p);
    ids = [];
    traceparent = undefined;
  };

  return {
    add(eventIds, tp) {
      if (eventIds.length === 0) return;
      if (ids.length === 0) traceparent = tp;
      ids.push(...eventIds);
      if (opts.lingerMs <= 0 || ids.length >= opts.maxIds) flush();
      else timer ??= setTimeout(flush, opts.lingerMs);
    },
    async drain() {
      flush();
      await Promise.all([...sending]);
    },
  };
}
