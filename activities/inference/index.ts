/**
 * Inference (docs/protocol.md §1.2–1.5, 2.3, 2.6): the swarm as this process sees it. Requests go to an
 * eligible swarm worker when one is online (today: this node's own runtime, see dispatcher.ts), else to the
 * fast-inference backbone, transparently marked; every inference leaves a `hive/inference` proof record.
 *
 * `createSwarm` builds it from its dependencies; `start()` registers this node's worker (when
 * WORKER_RUNTIME_URL is set), heartbeats and pre-warms; `stop()` ends that. The chat route uses `chat` /
 * `chatStream`, the compound-job engine `runInference`, the /svc routes the views.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { Logger } from 'pino';
import { z } from 'zod';
import { ServiceError } from '../../core/errors.js';
import { checkCell, DEFAULT_JOB_CELL } from '../../core/h3-cell.js';
import { createModelRegistry, type ModelInfo } from '../../core/model-registry.js';
import type { ToolPolicy } from '../../core/gates/tool-policy.js';
import type { WorkerTier } from '../../core/tiers.js';
import type { WorkerRegistry } from '../../store/worker-registry.js';
import type { RateLimitStore } from '../../store/types.js';
import type { ProofWriter } from '../proof/record-batcher.js';
import type { ChatJob } from './chat-job.js';
import { createDispatcher } from './dispatcher.js';
import { createInferenceEngine } from './inference-engine.js';
import { MAX_STATS_HOURS } from '../../core/query-params.js';
import { createInferenceStats, MAX_RECENT } from './inference-stats.js';
import { createLocalWorker } from './local-worker.js';
import type { Location } from './locations.js';
import { createRuntimeClient } from './runtime-client.js';
import { createSwarmStatus } from './swarm-status.js';
import { toolDefinitions, toolMinTiers } from './tool-definitions.js';
import type { ToolRunner } from './tool-loop.js';

export interface SwarmConfig {
  /** OpenAI-compatible base URL of this node's local model runtime (Ollama, llama.cpp server); unset: no local worker. */
  workerRuntimeUrl: string | undefined;
  /** Models the local worker serves (must be registry models). */
  workerModels: string[];
  /** Models to pre-warm at start (docs/protocol.md §1.12: tinyllama). */
  prewarmModels: string[];
  /** OpenAI-compatible base URL of the fast-inference backbone; unset: no backbone. */
  backboneUrl: string | undefined;
  backboneApiKey: string | undefined;
  /** Per runtime / backbone request. */
  timeoutMs: number;
  /** Chat messages per day per free-tier API key (docs/protocol.md §8: 50). */
  freeMessagesPerDay: number;
  /** Enabled registry models (`MODELS`); default: all five. */
  models?: string[];
  /** The local worker's H3 cell (`WORKER_CELL`); default: the default job cell. */
  workerCell?: string;
  /** Tools the local worker advertises (`WORKER_TOOLS`); default: web-search when a tool executor is given. */
  workerTools?: string[];
  /** Registry id → the runtime's model name (`WORKER_MODEL_NAMES`, e.g. phi-3-mini=phi3:mini for Ollama). */
  runtimeModelNames?: Record<string, string>;
  /** Server-side tool rounds per answer (default 3). */
  maxToolRounds?: number;
  /** Software version the local worker registers with. */
  version?: string;
}

export interface SwarmDeps {
  config: SwarmConfig;
  workers: WorkerRegistry;
  proofs: ProofWriter;
  clock: () => number;
  /** This node's public key: the local worker's identity when a runtime is configured. */
  nodePk: string;
  logger?: Logger;
  /** Server-side tool execution (web-search …); without it no tool can be offered to models. */
  tools?: ToolRunner;
  /** Counts the free tier's chat messages (shared with the gateway, so the quota holds across processes). */
  rateLimits: RateLimitStore;
  /** Gate 5 (TOOL_POLICY_FILE): checked again when this process takes a completion or an inference step up. */
  toolPolicy?: ToolPolicy | undefined;
}

/** A compound-job `inference` step (docs/protocol.md §2.2) as the job engine schedules it. */
export const inferenceStepSchema = z.object({
  job_id: z.string().min(1).max(128),
  step_id: z.string().min(1).max(128),
  model: z.string().optional(),
  messages: z.array(z.object({ role: z.enum(['system', 'user', 'assistant']), content: z.string() })).min(1),
  max_tokens: z.number().int().min(1).max(32_768).optional(),
  want_locations: z.boolean().optional(),
  tools: z.array(z.string()).optional(),
  h3_cell: z.string().optional(),
  jurisdiction: z.string().nullable().optional(),
  min_tier: z.string().nullable().optional(),
});
export type InferenceStep = z.input<typeof inferenceStepSchema>;

/** docs/protocol.md §2.3 inference step output, plus who served, what it cost and the record's epoch. */
export interface InferenceOutput {
  text: string;
  locations: Location[];
  model: string;
  provider: 'worker' | 'backbone';
  tokens_in: number;
  tokens_out: number;
  latency_ms: number;
  proof_job_id: string;
  worker_pk: string;
  cost: number;
  epoch: number;
}

export type { ChatJob } from './chat-job.js';
export type { InferenceResult, OpenStream } from './inference-engine.js';
export { newJobId } from './inference-engine.js';
export { BACKBONE_WORKER } from './inference-record.js';

export function createSwarm(deps: SwarmDeps) {
  const { config } = deps;
  const registry = createModelRegistry(config.models);
  for (const [name, ids] of [
    ['workerModels', config.workerModels],
    ['prewarmModels', config.prewarmModels],
  ] as const) {
    for (const id of ids) {
      if (registry.get(id)?.provider !== 'worker')
        throw new RangeError(`${name}: "${id}" is not an enabled worker model`);
    }
  }
  const workerCell = config.workerCell ?? DEFAULT_JOB_CELL;
  const cell = checkCell(workerCell, 'workerCell');
  if (!cell.ok) throw new RangeError(cell.detail);
  const local = config.workerRuntimeUrl
    ? createLocalWorker({
        config: {
          runtimeUrl: config.workerRuntimeUrl,
          models: config.workerModels,
          prewarm: config.prewarmModels.filter((m) => config.workerModels.includes(m)),
          tools: config.workerTools ?? (deps.tools ? ['web-search'] : []),
          cell: workerCell,
          version: config.version ?? 'unknown',
          timeoutMs: config.timeoutMs,
          runtimeNames: config.runtimeModelNames ?? {},
        },
        pk: deps.nodePk,
        workers: deps.workers,
        clock: deps.clock,
        logger: deps.logger,
      })
    : null;
  const backbone = config.backboneUrl
    ? createRuntimeClient({
        provider: 'backbone',
        baseURL: config.backboneUrl,
        apiKey: config.backboneApiKey,
        timeoutMs: config.timeoutMs,
      })
    : null;
  const stats = createInferenceStats(deps.clock());
  const views = createSwarmStatus({
    registry,
    workers: deps.workers,
    local,
    localCell: workerCell,
    backbone,
    stats,
    clock: deps.clock,
    epochNow: () => deps.proofs.epochNow(),
  });
  const engine = createInferenceEngine({
    dispatch: createDispatcher({ workers: deps.workers, clock: deps.clock, local, backbone }),
    local,
    proofs: deps.proofs,
    workers: deps.workers,
    stats,
    registry,
    runner: deps.tools,
    toolMinTiers,
    maxToolRounds: config.maxToolRounds ?? 3,
    clock: deps.clock,
    logger: deps.logger,
    onBackbone: views.noteBackbone,
    toolPolicy: deps.toolPolicy,
  });

  /** The `inference` step activity: retries find the first attempt's record (see inference-engine.ts). */
  async function runInference(input: InferenceStep): Promise<InferenceOutput> {
    try {
      const parsed = inferenceStepSchema.safeParse(input);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new ServiceError('invalid_request', `${issue?.path.join('.') || 'input'}: ${issue?.message}`);
      }
      const step = parsed.data;
      const model = registry.check(step.model ?? registry.defaultModel);
      if (!model.ok) throw new ServiceError(model.error, model.detail);
      const stepCell = checkCell(step.h3_cell ?? DEFAULT_JOB_CELL, 'h3_cell');
      if (!stepCell.ok) throw new ServiceError(stepCell.error, stepCell.detail);
      const job: ChatJob = {
        jobId: step.job_id,
        stepId: step.step_id,
        model: model.value,
        messages: step.messages,
        sampling: step.max_tokens === undefined ? {} : { max_tokens: step.max_tokens },
        clientTools: [],
        serverTools: toolDefinitions(step.tools ?? []),
        wantLocations: step.want_locations ?? false,
        cell: stepCell.value,
        jurisdiction: step.jurisdiction ?? null,
        minTier: (step.min_tier ?? null) as WorkerTier | null,
        apiKeyId: null,
      };
      const result = await engine.complete(job, undefined, true);
      const p = result.payload;
      return {
        text: result.message.content ?? '',
        locations: p.locations ?? result.locations ?? [],
        model: p.model,
        provider: p.provider,
        tokens_in: p.tokens_in,
        tokens_out: p.tokens_out,
        latency_ms: p.latency_ms,
        proof_job_id: result.recordId,
        worker_pk: p.worker_pk,
        cost: p.cost,
        epoch: p.epoch,
      };
    } catch (error) {
      if (!(error instanceof ServiceError)) throw error;
      if (error.status < 500) throw ApplicationFailure.nonRetryable(error.detail ?? error.code, error.code);
      throw ApplicationFailure.retryable(error.detail ?? error.code, error.code);
    }
  }

  // What this gateway can dispatch to: every model through the backbone (worker models fall back to it),
  // else only what its own worker serves. Remote workers are not reachable yet (dispatcher.ts).
  const servable = registry.models.filter((m) =>
    m.provider === 'backbone'
      ? backbone !== null
      : backbone !== null || (local !== null && config.workerModels.includes(m.id)),
  );

  return {
    models: registry,
    /** The models a request can be answered with now (`GET /v1/models`). */
    servable: (): readonly ModelInfo[] => servable,
    freeMessagesPerDay: config.freeMessagesPerDay,
    /** The injected clock (OpenAI's `created`). */
    now: deps.clock,
    logger: deps.logger,
    /** What `consumeChatQuota` counts with. */
    quota: { rateLimits: deps.rateLimits, clock: deps.clock },
    /** Registry tools by id as OpenAI function tools; unknown ids → `tool_not_found`. */
    toolDefinitions,
    async start(): Promise<void> {
      await local?.start();
    },
    /** Resolves once start-up pre-warming has finished (tests, and operators watching a cold node). */
    prewarmed: (): Promise<void> => local?.prewarmed() ?? Promise.resolve(),
    stop(): void {
      local?.stop();
    },
    /** One heartbeat of the local worker now (tests; the timer sends one every 30 s). */
    heartbeat: async (): Promise<void> => local?.heartbeat(),
    chat: (job: ChatJob, signal?: AbortSignal) => engine.complete(job, signal),
    chatStream: (job: ChatJob, signal?: AbortSignal) => engine.stream(job, signal),
    runInference,
    /** Newest first; `limit` 1..100. */
    recent: (limit: number) => stats.recent(Math.min(Math.max(1, limit), MAX_RECENT)),
    /** Hourly buckets; `hours` 1..168. */
    stats: (hours: number) =>
      stats.report(Math.min(Math.max(1, hours), MAX_STATS_HOURS), deps.proofs.epochNow(), deps.clock()),
    status: views.status,
    marketplace: views.marketplace,
  };
}
export type Swarm = ReturnType<typeof createSwarm>;
