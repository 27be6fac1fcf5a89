import { pass } from '../../core/check.js';
import { ServiceError } from '../../core/errors.js';
import { DEFAULT_JOB_CELL } from '../../core/h3-cell.js';
import { IMAGE_OPERATIONS, PLANNED_IMAGE_OPERATIONS } from '../../core/imagery-operations.js';
import { planJob, type JobPlan } from '../../core/job-plan.js';
import { isKnownModel } from '../../core/models.js';
import { estimateJobCost, withinBudget } from '../../core/pricing.js';
import { route } from '../route-spec.js';
import { computeRequestSchema, type ComputeRequest } from '../schemas/compute-request.js';
import { zodCheck } from '../schemas/zod-check.js';

interface ComputeInput {
  request: ComputeRequest;
  plan: JobPlan;
}

export const computeRoutes = () => [
  route<ComputeInput>({
    method: 'POST',
    path: '/v1/compute',
    auth: 'signed',
    jsonBody: true,
    defaultCell: DEFAULT_JOB_CELL,
    preflight: ({ body }) => {
      const request = zodCheck(computeRequestSchema, body);
      if (!request.ok) return request;
      const plan = planJob(request.value.steps);
      return plan.ok ? pass({ request: request.value, plan: plan.value }) : plan;
    },
    handler: async (_ctx, { request }, gates) => {
      for (const step of request.steps) checkStepAvailable(step);
      const jobCell = gates.place?.jobCell ?? DEFAULT_JOB_CELL;
      const estimate = estimateJobCost(request.steps, jobCell);
      if (!withinBudget(estimate.total_credits, request.budget_credits)) {
        throw new ServiceError(
          'budget_exceeded',
          `estimated cost ${estimate.total_credits} credits exceeds budget_credits ${request.budget_credits}`,
        );
      }
      // The job runner (Temporal or in-process) is not built yet: say so with the spec's error rather
      // than pretend to run the job.
      throw new ServiceError('no_workers', 'no job runner is available yet to execute compute jobs; retry later', {
        'retry-after': '60',
      });
    },
  }),
];

function checkStepAvailable(step: ComputeRequest['steps'][number]): void {
  if (step.type === 'sensor_fusion') {
    throw new ServiceError('step_type_unavailable', `step "${step.id}": sensor_fusion is planned and not available`);
  }
  if (step.model !== undefined && !isKnownModel(step.model)) {
    throw new ServiceError('invalid_model', `step "${step.id}": model "${step.model}" is not available`);
  }
  if (step.type === 'image_process') {
    const operation = step.operation ?? 'ndvi';
    if ((PLANNED_IMAGE_OPERATIONS as readonly string[]).includes(operation)) {
      throw new ServiceError(
        'step_type_unavailable',
        `step "${step.id}": ${operation} is available only as the MCP tool perception_classify`,
      );
    }
    if (!(IMAGE_OPERATIONS as readonly string[]).includes(operation)) {
      throw new ServiceError('invalid_request', `step "${step.id}": unknown image_process operation "${operation}"`);
    }
  }
}
