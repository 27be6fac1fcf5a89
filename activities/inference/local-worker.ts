/**
 * This node as a swarm worker (the embedded default's one built-in worker): when WORKER_RUNTIME_URL names a
 * local OpenAI-compatible runtime, the node registers itself in the worker registry under its own key,
 * heartbeats every 10 s (the registry marks it offline after 30 s without one), and pre-warms the configured
 * models (docs/protocol.md §1.12: only tinyllama by default) with a one-token completion each.
 *
 * Warm state is what this process has seen: a model is warm once the runtime answered for it. The first
 * request to a cold model is a cold start (docs/protocol.md §1.12: about 126 s for lfm2.5-1.2b-instruct): it is logged,
 * reported in the answer and the audit record, and the model is warm afterwards. A runtime that unloads an
 * idle model is not noticed; the next request is then slower than "warm" suggests.
 */
import { cpus, totalmem, platform, arch } from 'node:os';
import type { Logger } from 'pino';
import { supportedHardwareTier } from '../../core/hardware-tier.js';
import type { WorkerHardware, WorkerRegistry } from '../../store/worker-registry.js';
import { ServiceError } from '../../core/errors.js';
import { HEARTBEAT_INTERVAL_MS } from '../../core/worker-selection.js';
import { createRuntimeClient, type RuntimeClient } from './runtime-client.js';

export const HEARTBEAT_MS = HEARTBEAT_INTERVAL_MS;

export interface LocalWorkerConfig {
  runtimeUrl: string;
  models: readonly string[];
  prewarm: readonly string[];
  tools: readonly string[];
  cell: string;
  version: string;
  timeoutMs: number;
  /** Registry id → the runtime's own model name (e.g. phi-3-mini → phi3:mini for Ollama). */
  runtimeNames: Readonly<Record<string, string>>;
}

export interface LocalWorkerDeps {
  config: LocalWorkerConfig;
  pk: string;
  workers: WorkerRegistry;
  clock: () => number;
  logger?: Logger | undefined;
}

/** This machine's hardware as node:os sees it; no GPU detection, so tier 1 (docs/protocol.md §1.6 "any laptop"). */
export function localHardware(): WorkerHardware {
  return {
    platform: `${platform()}-${arch()}`,
    gpu: null,
    vram_gb: 0,
    ram_gb: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    cores: cpus().length,
  };
}

export function createLocalWorker(deps: LocalWorkerDeps) {
  const { config, logger } = deps;
  const client: RuntimeClient = createRuntimeClient({
    provider: 'worker',
    baseURL: config.runtimeUrl,
    apiKey: undefined,
    timeoutMs: config.timeoutMs,
  });
  const warm = new Set<string>();
  let seq = 0;
  let timer: NodeJS.Timeout | undefined;
  let prewarming: Promise<void> = Promise.resolve();
  const stopping = new AbortController();

  const runtimeName = (model: string) => config.runtimeNames[model] ?? model;

  async function register(): Promise<void> {
    const hardware = localHardware();
    const record = await deps.workers.register(
      {
        pk: deps.pk,
        h3_cell: config.cell,
        models: [...config.models],
        tools: [...config.tools],
        hardware,
        hardware_tier: supportedHardwareTier(hardware),
        relay: false,
        version: config.version,
      },
      deps.clock(),
    );
    seq = record.heartbeat_seq;
  }

  /** Heartbeat seqs are clock-based so a restarted node (same key) still exceeds what it sent before. */
  async function heartbeat(): Promise<void> {
    seq = Math.max(seq + 1, deps.clock());
    try {
      await deps.workers.heartbeat(deps.pk, seq, deps.clock());
    } catch (error) {
      // Gone from the registry (a wiped store) or out of step: register again, which also marks us seen.
      if (error instanceof ServiceError && ['worker_not_found', 'stale_request'].includes(error.code)) {
        await register();
        return;
      }
      throw error;
    }
  }

  async function prewarm(): Promise<void> {
    for (const model of config.prewarm) {
      if (stopping.signal.aborted) return;
      const started = performance.now();
      try {
        await client.complete(
          {
            model: runtimeName(model),
            messages: [{ role: 'user', content: 'hi' }],
            max_tokens: 1,
          },
          stopping.signal,
        );
        warm.add(model);
        logger?.info({ model, ms: Math.round(performance.now() - started) }, 'inference: model pre-warmed');
      } catch (error) {
        if (stopping.signal.aborted) return;
        logger?.warn({ model, err: error }, 'inference: pre-warming failed; the first request will be a cold start');
      }
    }
  }

  return {
    pk: deps.pk,
    client,
    runtimeName,
    /** Registers, starts heartbeats and pre-warming; resolves once registered (pre-warming goes on). */
    async start(): Promise<void> {
      await register();
      timer = setInterval(() => {
        heartbeat().catch((error: unknown) => logger?.error({ err: error }, 'inference: heartbeat failed'));
      }, HEARTBEAT_MS);
      timer.unref();
      prewarming = prewarm();
    },
    /** Resolves when pre-warming has finished (successfully or not). */
    prewarmed: () => prewarming,
    stop(): void {
      clearInterval(timer);
      timer = undefined;
      stopping.abort();
    },
    heartbeat,
    isWarm: (model: string) => warm.has(model),
    markWarm: (model: string) => void warm.add(model),
    warmModels: (): string[] => [...warm],
  };
}
export type LocalWorker = ReturnType<typeof createLocalWorker>;
