/**
 * Group commit for SQL round trips: calls that arrive while `maxInFlight` runs are busy
 * wait and are merged into the next run, so that under load many jobs share one
 * statement, while a lone call runs at once (no timer adds latency).
 */
export function createCoalescer<In, Out>(run: (inputs: In[]) => Promise<Out[]>, maxInFlight: number, maxBatch: number): (input: In) => Promise<Out> {
  let queue: { input: In; resolve: (o: Out) => void; reject: (e: unknown) => void }[] = [];
  let inFlight = 0;
  const pump = (): void => {
    while (inFlight < maxInFlight && queue.length > 0) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      inFlight++;
      run(batch.map((b) => b.input))
        .then(
          (outs) => batch.forEach((b, i) => b.resolve(outs[i]!)),
          (err: unknown) => batch.forEach((b) => b.reject(err)),
        )
        .finally(() => {
          inFlight--;
          pump();
        });
    }
  };
  return (input) =>
    new Promise<Out>((resolve, reject) => {
      queue.push({ input, resolve, reject });
      pump();
    });
}
