import assert from 'node:assert/strict';
import { createModelRegistry, MODEL_CATALOG, modelCost } from '../../core/model-registry.js';

describe('model registry', () => {
  it('knows the five swarm models and the backbone model, the protocol default first', () => {
    const registry = createModelRegistry();
    assert.deepEqual(
      registry.models.map((m) => m.id),
      [
        'lfm2.5-1.2b-instruct',
        'lfm2.5-1.2b-thinking',
        'phi-3-mini',
        'tinyllama',
        'gemma-2-2b',
        'llama-3.3-70b-versatile',
      ],
    );
    assert.equal(registry.defaultModel, 'lfm2.5-1.2b-instruct');
    for (const m of registry.workerModels) {
      assert.ok(m.family && m.parameters && m.context_length > 0, m.id);
      assert.ok(m.min_hardware_tier !== null && m.min_hardware_tier >= 1, m.id);
      assert.equal(m.price_per_token, 0.00001, m.id);
    }
    const backbone = registry.get('llama-3.3-70b-versatile');
    assert.equal(backbone?.provider, 'backbone');
    assert.equal(backbone?.price_per_token, 0);
  });

  it('enables a configured subset: a disabled model is invalid_model, the backbone stays', () => {
    const registry = createModelRegistry(['tinyllama', 'gemma-2-2b']);
    assert.deepEqual(
      registry.models.map((m) => m.id),
      ['tinyllama', 'gemma-2-2b', 'llama-3.3-70b-versatile'],
    );
    assert.equal(registry.defaultModel, 'tinyllama');
    const refused = registry.check('phi-3-mini');
    assert.equal(refused.ok, false);
    assert.equal(!refused.ok && refused.error, 'invalid_model');
    assert.ok(registry.check('llama-3.3-70b-versatile').ok);
  });

  it('refuses unknown or empty configurations at start', () => {
    assert.throws(() => createModelRegistry(['gpt-4']), /unknown worker model "gpt-4"/);
    assert.throws(() => createModelRegistry(['llama-3.3-70b-versatile']), /unknown worker model/);
    assert.throws(() => createModelRegistry([]), /at least one/);
  });

  it('prices tokens exactly in credits', () => {
    const worker = MODEL_CATALOG[0]!;
    assert.equal(modelCost(worker, 10_000), 0.1);
    assert.equal(modelCost(worker, 37), 0.00037);
    assert.equal(modelCost({ price_per_token: 0 }, 1_000_000), 0);
    assert.throws(() => modelCost(worker, -1), RangeError);
  });
});
