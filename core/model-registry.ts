/**
 * The model registry (docs/protocol.md §1.2, §1.3, §8): what each inference model is, what hardware it needs and
 * what a token of it costs. Swappable: the deployment enables a subset by id (`MODELS`); a model that is
 * not enabled is `invalid_model` everywhere. The backbone model is always known: it is what answers when no
 * worker can (docs/protocol.md §1.5), and it runs on the backbone provider, never on a worker.
 *
 * Prices: docs/protocol.md §8 states 0.00001 credits per token for the default model on a worker and 0 on the backbone;
 * it names no other model's price, so the other small models inherit the default's.
 */
import { fail, pass, type Check } from './check.js';
import { BACKBONE_MODEL, DEFAULT_WORKER_MODEL, WORKER_MODELS } from './models.js';
import { fromCreditUnits, PRICES, toCreditUnits } from './pricing.js';

/** docs/protocol.md §1.6 hardware tiers: 1 any laptop (CPU), 2 gaming PC, 3 professional GPU. */
export type ModelHardwareTier = 1 | 2 | 3;

export interface ModelInfo {
  id: string;
  family: string;
  /** Parameter count as models are usually named (e.g. "1.2B"). */
  parameters: string;
  context_length: number;
  /** Lowest hardware tier that runs the model at a usable speed; null for the backbone (not a worker). */
  min_hardware_tier: ModelHardwareTier | null;
  /** Credits per token, input and output alike. */
  price_per_token: number;
  provider: 'worker' | 'backbone';
}

const workerPrice = PRICES.inferenceWorkerPerToken;

/** Every model Geofabric knows; a deployment enables a subset of the worker models. */
export const MODEL_CATALOG: readonly ModelInfo[] = Object.freeze([
  {
    id: 'lfm2.5-1.2b-instruct',
    family: 'lfm2.5',
    parameters: '1.2B',
    context_length: 32_768,
    min_hardware_tier: 1,
    price_per_token: workerPrice,
    provider: 'worker',
  },
  {
    id: 'lfm2.5-1.2b-thinking',
    family: 'lfm2.5',
    parameters: '1.2B',
    context_length: 32_768,
    min_hardware_tier: 1,
    price_per_token: workerPrice,
    provider: 'worker',
  },
  {
    id: 'phi-3-mini',
    family: 'phi-3',
    parameters: '3.8B',
    context_length: 4_096,
    // 3.8B parameters answer at a few tokens per second on a laptop CPU: a GPU tier is the honest minimum.
    min_hardware_tier: 2,
    price_per_token: workerPrice,
    provider: 'worker',
  },
  {
    id: 'tinyllama',
    family: 'llama',
    parameters: '1.1B',
    context_length: 2_048,
    min_hardware_tier: 1,
    price_per_token: workerPrice,
    provider: 'worker',
  },
  {
    id: 'gemma-2-2b',
    family: 'gemma-2',
    parameters: '2.6B',
    context_length: 8_192,
    min_hardware_tier: 1,
    price_per_token: workerPrice,
    provider: 'worker',
  },
  {
    id: BACKBONE_MODEL,
    family: 'llama-3.3',
    parameters: '70B',
    context_length: 131_072,
    min_hardware_tier: null,
    price_per_token: PRICES.inferenceBackbonePerToken,
    provider: 'backbone',
  },
] satisfies ModelInfo[]);

export interface ModelRegistry {
  /** Enabled worker models in catalog order, then the backbone model. */
  readonly models: readonly ModelInfo[];
  readonly workerModels: readonly ModelInfo[];
  /** The model a request without `model` gets: the protocol's default (docs/protocol.md §1.3) when enabled, else the first enabled. */
  readonly defaultModel: string;
  get(id: string): ModelInfo | undefined;
  /** `invalid_model` unless the id is an enabled model or the backbone model. */
  check(id: string): Check<ModelInfo>;
}

/**
 * The registry of a deployment. `enabled`: worker model ids (default: all five). Throws RangeError for an
 * unknown id or an empty list, so a misconfiguration stops the process at start, not at the first request.
 */
export function createModelRegistry(enabled: readonly string[] = WORKER_MODELS): ModelRegistry {
  const catalog = new Map(MODEL_CATALOG.map((m) => [m.id, m]));
  const chosen = new Set<string>();
  for (const id of enabled) {
    const model = catalog.get(id);
    if (!model || model.provider !== 'worker') {
      throw new RangeError(`unknown worker model "${id}" (known: ${WORKER_MODELS.join(', ')})`);
    }
    chosen.add(id);
  }
  if (chosen.size === 0) throw new RangeError('at least one worker model must be enabled');
  const workerModels = MODEL_CATALOG.filter((m) => chosen.has(m.id));
  const models = [...workerModels, catalog.get(BACKBONE_MODEL)!];
  const byId = new Map(models.map((m) => [m.id, m]));
  return {
    models,
    workerModels,
    defaultModel: chosen.has(DEFAULT_WORKER_MODEL) ? DEFAULT_WORKER_MODEL : workerModels[0]!.id,
    get: (id) => byId.get(id),
    check: (id) => {
      const model = byId.get(id);
      return model
        ? pass(model)
        : fail(
            'invalid_model',
            `model "${id}" is not available (available: ${models.map((m) => m.id).join(', ')})`,
            'model',
          );
    },
  };
}

/** Credits for `tokens` of `model`, exact to 1e-8 credits (integer credit units, as core/pricing). */
export function modelCost(model: Pick<ModelInfo, 'price_per_token'>, tokens: number): number {
  if (!Number.isSafeInteger(tokens) || tokens < 0) throw new RangeError(`invalid token count: ${tokens}`);
  return fromCreditUnits(toCreditUnits(model.price_per_token) * tokens);
}
