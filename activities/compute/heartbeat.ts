import { Context } from '@temporalio/activity';

/**
 * Wraps activities so each attempt heartbeats every `intervalMs` while it runs: a step whose
 * worker dies stops heartbeating, and after the workflow's heartbeat timeout Temporal retries it, on any
 * worker polling the queue, instead of waiting out the whole step timeout. Only for Temporal Workers (the
 * embedded runner calls the activities directly, outside an activity context).
 */
export function withHeartbeats<T extends object>(activities: T, intervalMs: number): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities)) {
    if (typeof fn !== 'function') continue;
    wrapped[name] = async (...args: unknown[]) => {
      const context = Context.current();
      // A local activity (a gateway-run step, workflows/compute-job.ts) has no heartbeat: its workflow task is its lease.
      if (context.info.isLocal) return (fn as (...a: unknown[]) => Promise<unknown>)(...args);
      context.heartbeat();
      const timer = setInterval(() => context.heartbeat(), intervalMs);
      try {
        return await (fn as (...a: unknown[]) => Promise<unknown>)(...args);
      } finally {
        clearInterval(timer);
      }
    };
  }
  return wrapped as T;
}
