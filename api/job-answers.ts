/**
 * Answers of the jobs this gateway runs on Temporal, handed over in-process (docs/architecture.md "Eager start").
 * finishJob is a local activity: it runs in the process whose Worker holds the run's workflow task, which for an
 * eagerly started run is the gateway that took the request. It delivers the stored answer here, and the request
 * takes it without waiting for Temporal to complete the workflow task and report back.
 */
import type { ComputeResponse } from '../core/job-record.js';

export interface JobAnswers {
  /** Resolves with the job's answer when this process delivers it; `cancel` stops waiting. */
  wait(jobId: string): { answer: Promise<ComputeResponse>; cancel(): void };
  /** Hands a finished job's stored answer to whoever waits for it here (nobody: nothing happens). */
  deliver(answer: ComputeResponse): void;
}

export function createJobAnswers(): JobAnswers {
  const waiting = new Map<string, Set<(answer: ComputeResponse) => void>>();
  return {
    wait(jobId) {
      let resolve!: (answer: ComputeResponse) => void;
      const answer = new Promise<ComputeResponse>((r) => (resolve = r));
      let set = waiting.get(jobId);
      if (!set) waiting.set(jobId, (set = new Set()));
      set.add(resolve);
      return {
        answer,
        cancel() {
          set.delete(resolve);
          if (set.size === 0 && waiting.get(jobId) === set) waiting.delete(jobId);
        },
      };
    },
    deliver(answer) {
      const set = waiting.get(answer.job_id);
      if (!set) return;
      waiting.delete(answer.job_id);
      for (const resolve of set) resolve(answer);
    },
  };
}
