/**
 * Runs one inference end to end: dispatch (worker or backbone), the upstream call (whole or streamed, tool
 * rounds included), accounting (tokens, cost, latency, cold start) and the `hive/inference` proof record.
 *
 * Records: a chat completion queues its record (`ProofWriter.record`: id and epoch known at once, written in
 * the next batch, ≤ 1 s later) so the answer does not wait for a flush; a compound-job step awaits it
 * (`write`), because an activity must not report success before its record is durable. A step's record id is
 * derived from job and step, so a retried step finds the first attempt's record and reports its accounting.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { ChatCompletionChunk, ChatCompletionMessage } from 'openai/resources/chat/completions';
import { ServiceError } from '../../core/errors.js';
import { takeUpToolRefusal, type ToolPolicy } from '../../core/gates/tool-policy.js';
import { BACKBONE_MODEL } from '../../core/models.js';
import { modelCost, type ModelRegistry } from '../../core/model-registry.js';
import { estimateTokens } from '../../core/pricing.js';
import { stepRecordId } from '../../core/proof-record.js';
import { sha256Hex } from '../../core/hash.js';
import type { WorkerTier } from '../../core/tiers.js';
import type { WorkerRegistry } from '../../store/worker-registry.js';
import type { ProofWriter } from '../proof/record-batcher.js';
import { requestHashes, upstreamParams, type ChatJob } from './chat-job.js';
import type { Dispatch, Target } from './dispatcher.js';
import { BACKBONE_WORKER, inferencePayloadSchema, jcsSha256, type InferencePayload } from './inference-record.js';
import { recentEntry, type InferenceStats } from './inference-stats.js';
import type { LocalWorker } from './local-worker.js';
import { parseLocatedAnswer, type Location } from './locations.js';
import { InferenceAborted } from './runtime-client.js';
import { runToolLoop, type ToolRunner, type Usage } from './tool-loop.js';

/** The record's payload less its hashes, which only the record carries: what an answer reports. */
export type InferenceAccount = Omit<InferencePayload, 'prompt_sha256' | 'answer_sha256' | 'job_hash'>;

export interface InferenceResult {
  payload: InferenceAccount;
  recordId: string;
  /** The answer: text (locations stripped when asked for) or the client's tool calls. */
  message: ChatCompletionMessage;
  finishReason: string;
  locations: Location[] | null;
}

/** A streamed answer: who answers is known before the first delta; the generator returns the result. */
export interface OpenStream {
  jobId: string;
  model: string;
  provider: 'worker' | 'backbone';
  deltas: AsyncGenerator<{ delta: ChatCompletionChunk.Choice.Delta; finish_reason: string | null }, InferenceResult>;
}

export interface EngineDeps {
  dispatch: Dispatch;
  local: LocalWorker | null;
  proofs: ProofWriter;
  workers: WorkerRegistry;
  stats: InferenceStats;
  registry: ModelRegistry;
  runner: ToolRunner | undefined;
  toolMinTiers: (tools: readonly string[]) => Record<string, WorkerTier>;
  maxToolRounds: number;
  clock: () => number;
  logger?: Logger | undefined;
  /** Told after each backbone call whether the backbone answered (for /svc/status). */
  onBackbone: (reachable: boolean) => void;
  /** Gate 5 (TOOL_POLICY_FILE), checked again when this process takes a completion or step up. */
  toolPolicy?: ToolPolicy | undefined;
}

interface Prepared {
  job: ChatJob;
  target: Target;
  servedModel: string;
  workerPk: string;
  coldStart: boolean;
  started: number;
}

export const newJobId = (): string => randomUUID();

/**
 * The inference's proof record id, derived from job and step. It also keys the worker's outcome
 * (WorkerRegistry.recordOutcome counts one per id), so a retried step never counts twice.
 */
const recordIdOf = (job: ChatJob): string =>
  job.stepId === null ? `inference:${job.jobId}` : stepRecordId('inference', job.jobId, job.stepId);

export function createInferenceEngine(deps: EngineDeps) {
  async function prepare(job: ChatJob): Promise<Prepared> {
    const target = await deps.dispatch({
      model: job.model,
      tools: job.serverTools.map((t) => t.function.name),
      toolMinTiers: deps.toolMinTiers(job.serverTools.map((t) => t.function.name)),
      jurisdiction: job.jurisdiction,
      minTier: job.minTier,
      cell: job.cell,
    });
    const worker = target.provider === 'worker';
    // Take-up (docs/security.md "The fifth gate"): whatever entry judged, no tool runs here that the policy
    // forbids at the job's cell or at the cell of the worker that took it (the tool loop runs in this process).
    const refused = takeUpToolRefusal(deps.toolPolicy, {
      tools: job.serverTools.map((t) => t.function.name),
      cells: worker ? [job.cell, target.worker.h3_cell] : [job.cell],
      workerTier: worker ? target.worker.trust_tier : undefined,
    });
    if (refused !== null) throw new ServiceError('tool_not_permitted', refused.detail);
    const coldStart = worker && deps.local !== null && !deps.local.isWarm(job.model.id);
    if (coldStart) deps.logger?.info({ model: job.model.id, job_id: job.jobId }, 'inference: cold start');
    return {
      job,
      target,
      servedModel: worker ? job.model.id : BACKBONE_MODEL,
      workerPk: worker ? target.worker.pk : BACKBONE_WORKER,
      coldStart,
      started: performance.now(),
    };
  }

  const wireModel = (p: Prepared) =>
    p.target.provider === 'worker' && deps.local ? deps.local.runtimeName(p.job.model.id) : BACKBONE_MODEL;

  /** Books a failure: stats, the worker's trust ladder, backbone reachability. Rethrows. */
  async function failed(p: Prepared | null, error: unknown): Promise<never> {
    if (error instanceof InferenceAborted) throw error;
    deps.stats.error(deps.proofs.epochNow());
    if (p?.target.provider === 'backbone') deps.onBackbone(false);
    if (p?.target.provider === 'worker' && error instanceof ServiceError && error.status >= 500) {
      await deps.workers.recordOutcome(p.workerPk, 'failed', recordIdOf(p.job)).catch(() => undefined);
    }
    throw error;
  }

  async function finish(
    p: Prepared,
    message: ChatCompletionMessage,
    finishReason: string,
    usage: Usage | null,
    toolCalls: number,
    durable: boolean,
  ): Promise<InferenceResult> {
    const { job } = p;
    let locations: Location[] | null = null;
    let answer = message;
    if (job.wantLocations && !message.tool_calls?.length) {
      const parsed = parseLocatedAnswer(message.content ?? '');
      locations = parsed.locations;
      answer = { ...message, content: parsed.text };
    }
    const tokensIn = usage?.prompt_tokens ?? estimateTokens(job.messages.map((m) => ({ content: textOf(m.content) })));
    const tokensOut = usage?.completion_tokens ?? Math.ceil((answer.content ?? '').length / 4);
    const served = deps.registry.get(p.servedModel) ?? job.model;
    const worker = p.target.provider === 'worker';
    // The answer reports this epoch; a record queued after the answer is dated here too (same epoch).
    const stamp = deps.proofs.stamp();
    const recordId = recordIdOf(job);
    // In the record's key order; the hashes go between tool_calls and cost (payloadWithHashes).
    const account: InferenceAccount = {
      version: 1,
      job_id: job.jobId,
      step_id: job.stepId,
      provider: p.target.provider,
      model: p.servedModel,
      requested_model: job.model.id,
      worker_pk: p.workerPk,
      tokens_in: tokensIn,
      tokens_out: tokensOut,
      usage_estimated: usage === null,
      latency_ms: Math.round(performance.now() - p.started),
      cold_start: p.coldStart,
      fallback_reason: p.target.provider === 'backbone' ? p.target.fallbackReason : null,
      tool_calls: toolCalls,
      cost: worker ? modelCost(served, tokensIn + tokensOut) : 0,
      epoch: stamp.epoch,
      h3_cell: job.cell,
      api_key_id: job.apiKeyId,
      ...(job.stepId !== null ? { locations: locations ?? [] } : {}),
    };
    if (durable) {
      // A step awaits its record and its outcome: an activity must not report success before they are durable.
      const entry = recordEntry(recordId, payloadWithHashes(account, job, answer));
      const written = await deps.proofs.write(entry);
      const stored = inferencePayloadSchema.safeParse(written.payload);
      const recorded = stored.success ? stored.data : entry.payload; // a retried step reports what was first accounted
      if (worker) {
        deps.local?.markWarm(job.model.id);
        await deps.workers.recordOutcome(p.workerPk, 'completed', recordId).catch(() => undefined);
      } else deps.onBackbone(true);
      const now = deps.clock();
      deps.stats.add(recentEntry(recorded, recordId, new Date(now).toISOString()), now);
      // The id the record was stored under: a writer-scoped one when another key holds the derived id.
      return { payload: recorded, recordId: written.id, message: answer, finishReason, locations };
    }
    if (worker) {
      deps.local?.markWarm(job.model.id);
      // Counted in memory now, written in the registry's next batch (store/outcome-batch.ts): every later read
      // of the worker counts it. A registry without batches writes it after the answer.
      if (deps.workers.countCompleted) deps.workers.countCompleted(p.workerPk, recordId);
      else
        setImmediate(() => void deps.workers.recordOutcome(p.workerPk, 'completed', recordId).catch(() => undefined));
    } else deps.onBackbone(true);
    const now = deps.clock();
    // A chat completion's answer needs none of the rest: its record (hashes, signing queue) and the recent-inference
    // entry are made once the answer is written. setImmediate runs after this turn's
    // promise chain, which ends in the response write, and before the next request is read, so every later
    // request sees them; only a crash within that turn loses them (a queued record waits up to a second anyway).
    setImmediate(() => {
      try {
        const entry = recordEntry(recordId, payloadWithHashes(account, job, answer));
        deps.proofs.record(entry, stamp);
        deps.stats.add(recentEntry(entry.payload, recordId, new Date(now).toISOString()), now);
      } catch (error) {
        deps.logger?.error({ err: error, job_id: job.jobId }, 'inference: the proof record could not be queued');
      }
    });
    return { payload: account, recordId, message: answer, finishReason, locations };
  }

  /** The whole answer at once (tool rounds included). */
  async function complete(job: ChatJob, signal?: AbortSignal, durable = false): Promise<InferenceResult> {
    let p: Prepared | null = null;
    try {
      p = await prepare(job);
      const outcome = await runToolLoop({
        client: p.target.client,
        params: upstreamParams(job, wireModel(p)),
        serverTools: new Set(job.serverTools.map((t) => t.function.name)),
        runner: deps.runner,
        maxRounds: deps.maxToolRounds,
        signal,
      });
      const choice = outcome.completion.choices[0];
      const message = choice?.message ?? { role: 'assistant', content: '', refusal: null };
      return await finish(p, message, choice?.finish_reason ?? 'stop', outcome.usage, outcome.toolCalls, durable);
    } catch (error) {
      return failed(p, error);
    }
  }

  /**
   * A streamed answer. Dispatch and the upstream's acceptance happen before this resolves, so their failures
   * are still HTTP errors; later failures are thrown by the generator. Answers that must be whole before
   * they can be sent (server-side tools, locations) are produced whole and sent as one delta.
   */
  async function stream(job: ChatJob, signal?: AbortSignal): Promise<OpenStream> {
    if (job.serverTools.length > 0 || job.wantLocations) {
      const result = await complete(job, signal);
      const deltas = (async function* (): OpenStream['deltas'] {
        const { content, tool_calls } = result.message;
        yield { delta: { role: 'assistant', content: content ?? '' }, finish_reason: null };
        const calls = (tool_calls ?? []).flatMap((c, index) =>
          c.type === 'function' ? [{ index, id: c.id, type: c.type, function: c.function }] : [],
        );
        if (calls.length > 0) yield { delta: { tool_calls: calls }, finish_reason: null };
        yield { delta: {}, finish_reason: result.finishReason };
        return result;
      })();
      return { jobId: job.jobId, model: result.payload.model, provider: result.payload.provider, deltas };
    }
    let p: Prepared | null = null;
    let upstream: AsyncIterable<ChatCompletionChunk>;
    try {
      p = await prepare(job);
      upstream = await p.target.client.stream(upstreamParams(job, wireModel(p)), signal);
    } catch (error) {
      return failed(p, error);
    }
    const prepared = p;
    const deltas = (async function* (): OpenStream['deltas'] {
      let content = '';
      let usage: Usage | null = null;
      let finishReason = 'stop';
      const calls: ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
      try {
        for await (const chunk of upstream) {
          if (chunk.usage) usage = chunk.usage;
          const choice = chunk.choices[0];
          if (!choice) continue;
          const { role, content: text, tool_calls, refusal } = choice.delta;
          if (text) content += text;
          if (tool_calls) calls.push(...tool_calls);
          if (choice.finish_reason) finishReason = choice.finish_reason;
          const delta = { ...(role ? { role } : {}), ...(text != null ? { content: text } : {}) };
          yield {
            delta: { ...delta, ...(tool_calls ? { tool_calls } : {}), ...(refusal ? { refusal } : {}) },
            finish_reason: choice.finish_reason,
          };
        }
      } catch (error) {
        return failed(prepared, error);
      }
      const message: ChatCompletionMessage = { role: 'assistant', content, refusal: null };
      if (calls.length > 0) message.tool_calls = mergeToolCalls(calls);
      return finish(prepared, message, finishReason, usage, 0, false);
    })();
    return { jobId: job.jobId, model: prepared.servedModel, provider: prepared.target.provider, deltas };
  }

  return { complete, stream };
}
export type InferenceEngine = ReturnType<typeof createInferenceEngine>;

const recordEntry = (id: string, payload: InferencePayload) => ({
  id,
  h3_cell: payload.h3_cell,
  collection_type: 'inference' as const,
  payload_type: 'hive/inference' as const,
  payload,
});

/** The `hive/inference` payload: the account with the prompt, answer and job hashes, in the record's key order. */
function payloadWithHashes(a: InferenceAccount, job: ChatJob, answer: ChatCompletionMessage): InferencePayload {
  const hashes = requestHashes(job);
  const payload: InferencePayload = {
    version: a.version,
    job_id: a.job_id,
    step_id: a.step_id,
    provider: a.provider,
    model: a.model,
    requested_model: a.requested_model,
    worker_pk: a.worker_pk,
    tokens_in: a.tokens_in,
    tokens_out: a.tokens_out,
    usage_estimated: a.usage_estimated,
    latency_ms: a.latency_ms,
    cold_start: a.cold_start,
    fallback_reason: a.fallback_reason,
    tool_calls: a.tool_calls,
    prompt_sha256: hashes.prompt,
    answer_sha256: answer.tool_calls?.length ? jcsSha256(answer.tool_calls) : sha256Hex(answer.content ?? ''),
    job_hash: hashes.job,
    cost: a.cost,
    epoch: a.epoch,
    h3_cell: a.h3_cell,
    api_key_id: a.api_key_id,
  };
  if (a.locations !== undefined) payload.locations = a.locations;
  return payload;
}

const textOf = (content: unknown): string =>
  typeof content === 'string' ? content : content == null ? '' : JSON.stringify(content);

/** Streamed tool-call fragments (by index) as whole calls, for the answer hash. */
function mergeToolCalls(parts: ChatCompletionChunk.Choice.Delta.ToolCall[]): ChatCompletionMessage['tool_calls'] {
  const byIndex = new Map<number, { id: string; name: string; arguments: string }>();
  for (const part of parts) {
    const call = byIndex.get(part.index) ?? { id: '', name: '', arguments: '' };
    call.id ||= part.id ?? '';
    call.name += part.function?.name ?? '';
    call.arguments += part.function?.arguments ?? '';
    byIndex.set(part.index, call);
  }
  return [...byIndex.values()].map((c) => ({
    id: c.id,
    type: 'function' as const,
    function: { name: c.name, arguments: c.arguments },
  }));
}
