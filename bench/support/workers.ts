/**
 * Runs `task` for the indexes 0 to count - 1, `workers` at a time: each worker takes the next index as soon
 * as its task is done, so the load keeps that many in flight (connections, concurrent requests) to the end.
 */
export async function inFlight(count: number, workers: number, task: (index: number) => Promise<unknown>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (next < count) await task(next++);
    }),
  );
}
