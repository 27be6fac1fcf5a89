/**
 * How a swarm worker's step waits out its gateway being briefly out of reach (killed and restarting, paused, its
 * store down) instead of failing the attempt at once. Without it a step's few attempts (1 + 2 + 4 + 8 s of
 * Temporal backoff) were spent within one gateway restart, and a job whose step had run failed for want of an
 * upload (docs/operations.md, "What the runs found"). The step heartbeats meanwhile
 * (activities/compute/heartbeat.ts), and the bound stays far below its time limit.
 */

/** How long one call waits out an unreachable gateway in all before the step attempt fails. */
export const GATEWAY_OUTAGE_WAIT_MS = 60_000;

/**
 * `call` until it succeeds, fails with something `isOutage` does not accept, or the outages have lasted
 * `boundMs`: then the last error. Backoff 0.5, 1, 2, 4 s, then every 5 s. Only for calls that are safe to send
 * again (reads, content-addressed writes).
 */
export async function waitingOutOutages<T>(
  call: () => Promise<T>,
  isOutage: (error: unknown) => boolean,
  boundMs: number = GATEWAY_OUTAGE_WAIT_MS,
): Promise<T> {
  const since = Date.now();
  for (let outages = 0; ; outages++) {
    try {
      return await call();
    } catch (error) {
      const wait = Math.min(500 * 2 ** outages, 5_000);
      if (!isOutage(error) || Date.now() - since + wait > boundMs) throw error;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}
