/** The run side of `inference` steps (./spec.ts). */
import { isBlobRef } from '../../blob-ref.js';
import { dependenciesOf } from '../../job-plan.js';
import { defineStepRun } from './spec.js';

/** What the input builder reads of an inference step. */
export interface InferenceRunStep {
  id: string;
  depends_on?: string | readonly string[] | undefined;
  model?: string | undefined;
  messages?: { role: string; content: string }[] | undefined;
  max_tokens?: number | undefined;
  tools?: string[] | undefined;
}

/** Each dependency's output shown to a model is cut here: a prompt is not a data pipe. */
export const MAX_CONTEXT_CHARS = 8000;

export interface InferenceStepInput {
  job_id: string;
  step_id: string;
  model?: string;
  messages: { role: 'system' | 'user' | 'assistant'; content: string }[];
  max_tokens?: number;
  want_locations: boolean;
  tools?: string[];
  h3_cell: string;
  jurisdiction: string | null;
  min_tier: string | null;
}

export const inferenceRun = defineStepRun({
  activity: 'inferenceStep',
  activityInput: (job, step: InferenceRunStep, dependencyOutputs): InferenceStepInput => {
    const dependencies = dependenciesOf(step);
    const messages = (step.messages ?? []).map((m) => ({
      role: m.role as InferenceStepInput['messages'][number]['role'],
      content: m.content,
    }));
    messages.unshift(
      ...dependencyOutputs.map((output, i) => ({
        role: 'system' as const,
        content: dependencyContext(dependencies[i]!, output),
      })),
    );
    const input: InferenceStepInput = {
      job_id: job.job_id,
      step_id: step.id,
      messages,
      // A tile_render step draws the places of the steps it depends on (docs/protocol.md §2.2 rule 2).
      want_locations: job.steps.some((s) => s.type === 'tile_render' && dependenciesOf(s).includes(step.id)),
      h3_cell: job.h3_cell,
      jurisdiction: job.jurisdiction,
      min_tier: job.min_tier,
    };
    if (step.model !== undefined) input.model = step.model;
    if (step.max_tokens !== undefined) input.max_tokens = step.max_tokens;
    if (step.tools !== undefined) input.tools = step.tools;
    return input;
  },
});

function dependencyContext(stepId: string, output: Record<string, unknown>): string {
  const { image_base64: _image, ...rest } = output;
  // A field kept out of line (core/blob-ref.ts) shows its head: the prompt is cut at MAX_CONTEXT_CHARS anyway.
  const json = JSON.stringify(rest, (_key, value: unknown) =>
    isBlobRef(value) ? (value.head ?? `[${value.bytes} bytes]`) : value,
  );
  const cut = json.length > MAX_CONTEXT_CHARS ? `${json.slice(0, MAX_CONTEXT_CHARS)}…` : json;
  return `Output of the job's step "${stepId}" (JSON), for use in your answer:\n${cut}`;
}
