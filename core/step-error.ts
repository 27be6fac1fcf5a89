/**
 * A failed step as the job reports it: the spec's error code when the failure carries one. Step
 * activities throw Temporal ApplicationFailures typed by the code (activities/*); under Temporal they arrive
 * wrapped in an ActivityFailure, in process as they were thrown; gateway code may throw a ServiceError.
 */
import { ApplicationFailure } from '@temporalio/common';
import { ServiceError } from './errors.js';
import type { StepError } from './job-scheduler.js';

export function describeStepError(error: unknown): StepError {
  if (error instanceof ServiceError) return { code: error.code, detail: error.detail ?? error.message };
  for (let cause: unknown = error; cause instanceof Error; cause = (cause as { cause?: unknown }).cause) {
    if (cause instanceof ApplicationFailure && cause.type) return { code: cause.type, detail: cause.message };
  }
  return { code: 'step_failed', detail: error instanceof Error ? error.message : String(error) };
}
