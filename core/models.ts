/**
 * Inference models the service knows (docs/protocol.md §1.3). The swarm's default runs on workers; the backbone
 * model answers when no worker is online. The full registry (hardware tiers, prices, warm state) builds
 * on this list.
 */
export const DEFAULT_WORKER_MODEL = 'lfm2.5-1.2b-instruct';
export const BACKBONE_MODEL = 'llama-3.3-70b-versatile';
export const WORKER_MODELS = [
  'lfm2.5-1.2b-instruct',
  'lfm2.5-1.2b-thinking',
  'phi-3-mini',
  'tinyllama',
  'gemma-2-2b',
] as const;

export const isKnownModel = (model: string): boolean =>
  model === BACKBONE_MODEL || (WORKER_MODELS as readonly string[]).includes(model);
