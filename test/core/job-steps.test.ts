import assert from 'node:assert/strict';
import {
  DEFAULT_IMAGE_OPERATION,
  DEFAULT_TILE_STYLE,
  DEFAULT_TILE_ZOOM,
  MAX_CONTEXT_CHARS,
  STEP_ACTIVITY,
  stepActivityInput,
  toScheduledStep,
  type ComputeJobInput,
  type ImageStepInput,
  type InferenceStepInput,
  type JobStepSpec,
  type TileStepInput,
} from '../../core/job-steps.js';
import { STEP_TYPE_SPECS, STEP_TYPES, requestStepSchema, requiredTools } from '../../core/step-types/index.js';

const JOB_CELL = '861e8050fffffff';
const OTHER_CELL = '861e8051fffffff';
const CONTEXT_CELL = '871e80508ffffff';

type JobStep = ComputeJobInput['steps'][number];

function job(steps: JobStepSpec[], overrides: Partial<ComputeJobInput> = {}): ComputeJobInput {
  return {
    job_id: 'job-1',
    requester_pk: 'requester',
    h3_cell: JOB_CELL,
    epoch: 7,
    budget_credits: 1,
    proof_credits: 0.0001,
    steps: steps.map((s) => ({ ...s, estimate: 0.001 })),
    plan: { order: steps.map((s) => s.id), levels: [steps.map((s) => s.id)] },
    jurisdiction: null,
    min_tier: null,
    request_hash: 'ab'.repeat(32),
    created_at: '2026-03-01T12:00:00.000Z',
    ...overrides,
  };
}

/** The activity input of step `id` of `j`, asserting its type. */
function inferenceInput(j: ComputeJobInput, id: string, dependency?: Record<string, unknown>): InferenceStepInput {
  const built = stepActivityInput(j, stepOf(j, id), dependency === undefined ? [] : [dependency]);
  assert.equal(built.type, 'inference');
  return built.input as InferenceStepInput;
}
function tileInput(j: ComputeJobInput, id: string, dependency?: Record<string, unknown>): TileStepInput {
  const built = stepActivityInput(j, stepOf(j, id), dependency === undefined ? [] : [dependency]);
  assert.equal(built.type, 'tile_render');
  return built.input as TileStepInput;
}
function imageInput(j: ComputeJobInput, id: string): ImageStepInput {
  const built = stepActivityInput(j, stepOf(j, id), []);
  assert.equal(built.type, 'image_process');
  return built.input as ImageStepInput;
}
function stepOf(j: ComputeJobInput, id: string): JobStep {
  const found = j.steps.find((s) => s.id === id);
  assert.ok(found, `no step "${id}"`);
  return found;
}

const CONTEXT_PREFIX = `Output of the job's step "ndvi" (JSON), for use in your answer:\n`;

describe('job steps: activity inputs (docs/protocol.md §2.2 rules 1, 2)', () => {
  describe('inference', () => {
    it('passes the messages, the job cell and the worker constraints through, without a dependency', () => {
      const j = job(
        [
          {
            id: 'ask',
            type: 'inference',
            model: 'tinyllama',
            max_tokens: 64,
            tools: ['web-search'],
            messages: [
              { role: 'system', content: 'Be brief.' },
              { role: 'user', content: 'Is Rome green?' },
            ],
          },
        ],
        { jurisdiction: 'EU', min_tier: 'tier-2' },
      );
      assert.deepEqual(stepActivityInput(j, stepOf(j, 'ask'), []), {
        type: 'inference',
        input: {
          job_id: 'job-1',
          step_id: 'ask',
          model: 'tinyllama',
          max_tokens: 64,
          tools: ['web-search'],
          messages: [
            { role: 'system', content: 'Be brief.' },
            { role: 'user', content: 'Is Rome green?' },
          ],
          want_locations: false,
          h3_cell: JOB_CELL,
          jurisdiction: 'EU',
          min_tier: 'tier-2',
        },
      });
    });

    it('leaves model, max_tokens and tools out when the step has none', () => {
      const input = inferenceInput(job([{ id: 'ask', type: 'inference' }]), 'ask');
      assert.deepEqual(input, {
        job_id: 'job-1',
        step_id: 'ask',
        messages: [],
        want_locations: false,
        h3_cell: JOB_CELL,
        jurisdiction: null,
        min_tier: null,
      });
      for (const key of ['model', 'max_tokens', 'tools']) assert.equal(key in input, false, key);
    });

    it('puts the dependency output first, as a system message of its JSON', () => {
      const j = job([
        { id: 'ndvi', type: 'image_process' },
        { id: 'ask', type: 'inference', depends_on: 'ndvi', messages: [{ role: 'user', content: 'Summarise.' }] },
      ]);
      const input = inferenceInput(j, 'ask', { mean_ndvi: 0.42, scene: 'S2A' });
      assert.deepEqual(input.messages, [
        { role: 'system', content: `${CONTEXT_PREFIX}{"mean_ndvi":0.42,"scene":"S2A"}` },
        { role: 'user', content: 'Summarise.' },
      ]);
    });

    it('leaves image_base64 out of the dependency output shown to the model', () => {
      const j = job([
        { id: 'ndvi', type: 'image_process' },
        { id: 'ask', type: 'inference', depends_on: 'ndvi' },
      ]);
      const input = inferenceInput(j, 'ask', { image_base64: 'iVBORw0KGgo=', mean_ndvi: 0.42 });
      assert.equal(input.messages[0]?.content, `${CONTEXT_PREFIX}{"mean_ndvi":0.42}`);
      assert.doesNotMatch(input.messages[0]?.content ?? '', /iVBORw0KGgo|image_base64/);
    });

    it(`cuts the dependency JSON at MAX_CONTEXT_CHARS (${MAX_CONTEXT_CHARS}) and marks the cut`, () => {
      const j = job([
        { id: 'ndvi', type: 'image_process' },
        { id: 'ask', type: 'inference', depends_on: 'ndvi' },
      ]);
      // `{"t":"…"}` is 8 characters plus the string.
      const atLimit = { t: 'x'.repeat(MAX_CONTEXT_CHARS - 8) };
      const overLimit = { t: 'y'.repeat(MAX_CONTEXT_CHARS) };

      const whole = inferenceInput(j, 'ask', atLimit).messages[0]?.content;
      assert.equal(whole, `${CONTEXT_PREFIX}${JSON.stringify(atLimit)}`);

      const cut = inferenceInput(j, 'ask', overLimit).messages[0]?.content;
      assert.equal(cut, `${CONTEXT_PREFIX}${JSON.stringify(overLimit).slice(0, MAX_CONTEXT_CHARS)}…`);
      assert.equal(cut?.length, CONTEXT_PREFIX.length + MAX_CONTEXT_CHARS + 1);
    });

    it('asks for locations only when a tile_render step depends on the inference step', () => {
      const j = job([
        { id: 'ask', type: 'inference' },
        { id: 'map', type: 'tile_render', depends_on: 'ask' },
        { id: 'other', type: 'inference' },
        { id: 'followup', type: 'inference', depends_on: 'other' },
        { id: 'lonely', type: 'inference' },
        { id: 'scene', type: 'image_process', depends_on: 'lonely' },
      ]);
      assert.equal(inferenceInput(j, 'ask').want_locations, true);
      assert.equal(inferenceInput(j, 'other').want_locations, false);
      assert.equal(inferenceInput(j, 'followup').want_locations, false);
      assert.equal(inferenceInput(j, 'lonely').want_locations, false);
    });
  });

  describe('tile_render', () => {
    it(`renders the job cell at zoom ${DEFAULT_TILE_ZOOM} in ${DEFAULT_TILE_STYLE} by default`, () => {
      assert.equal(DEFAULT_TILE_ZOOM, 12);
      assert.equal(DEFAULT_TILE_STYLE, 'osm-bright');
      const input = tileInput(job([{ id: 'map', type: 'tile_render' }]), 'map');
      assert.deepEqual(input, {
        job_id: 'job-1',
        step_id: 'map',
        center_cell: JOB_CELL,
        zoom: DEFAULT_TILE_ZOOM,
        style: DEFAULT_TILE_STYLE,
      });
      assert.equal('locations' in input, false);
    });

    it('renders the requested center cell, zoom and style', () => {
      const j = job([{ id: 'map', type: 'tile_render', center_cell: OTHER_CELL, zoom: 9, style: 'dark' }]);
      assert.deepEqual(tileInput(j, 'map'), {
        job_id: 'job-1',
        step_id: 'map',
        center_cell: OTHER_CELL,
        zoom: 9,
        style: 'dark',
      });
    });

    it("annotates the tile with the dependency's locations", () => {
      const j = job([
        { id: 'ask', type: 'inference' },
        { id: 'map', type: 'tile_render', depends_on: 'ask' },
      ]);
      const locations = [
        { name: 'Colosseum', lat: 41.8902, lng: 12.4922 },
        { name: 'Pantheon', address: 'Piazza della Rotonda', h3_cell: JOB_CELL },
      ];
      assert.deepEqual(tileInput(j, 'map', { text: 'two sights', locations }).locations, locations);
    });

    it('ignores a dependency whose locations are not a list', () => {
      const j = job([
        { id: 'ask', type: 'inference' },
        { id: 'map', type: 'tile_render', depends_on: 'ask' },
      ]);
      assert.equal('locations' in tileInput(j, 'map', { locations: 'Colosseum' }), false);
      assert.equal('locations' in tileInput(j, 'map', { text: 'none' }), false);
    });
  });

  describe('fan-in (depends_on lists several steps)', () => {
    const fanIn = job([
      { id: 'ndvi', type: 'image_process' },
      { id: 'ask', type: 'inference' },
      { id: 'more', type: 'inference' },
      { id: 'merge', type: 'inference', depends_on: ['ndvi', 'ask'], messages: [{ role: 'user', content: 'Both?' }] },
      { id: 'map', type: 'tile_render', depends_on: ['more', 'ask'] },
    ]);

    it('shows the model each dependency output as its own system message, in the listed order', () => {
      const built = stepActivityInput(fanIn, stepOf(fanIn, 'merge'), [{ mean_ndvi: 0.42 }, { text: 'dry' }]);
      assert.deepEqual((built.input as InferenceStepInput).messages, [
        { role: 'system', content: `${CONTEXT_PREFIX}{"mean_ndvi":0.42}` },
        { role: 'system', content: `${CONTEXT_PREFIX.replace('"ndvi"', '"ask"')}{"text":"dry"}` },
        { role: 'user', content: 'Both?' },
      ]);
    });

    it('annotates a tile with the locations of all its dependencies, in the listed order', () => {
      const built = stepActivityInput(fanIn, stepOf(fanIn, 'map'), [
        { locations: [{ name: 'Pantheon' }] },
        { text: 'no list' },
        { locations: [{ name: 'Colosseum' }] },
      ]);
      assert.deepEqual((built.input as TileStepInput).locations, [{ name: 'Pantheon' }, { name: 'Colosseum' }]);
    });

    it('asks an inference step for locations when a tile_render lists it among its dependencies', () => {
      assert.equal(inferenceInput(fanIn, 'ask').want_locations, true);
      assert.equal(inferenceInput(fanIn, 'more').want_locations, true);
      assert.equal(inferenceInput(fanIn, 'merge').want_locations, false);
    });
  });

  describe('image_process', () => {
    it('prefers context.h3_cell over center_cell over the job cell', () => {
      const j = job([
        { id: 'all', type: 'image_process', context: { h3_cell: CONTEXT_CELL }, center_cell: OTHER_CELL },
        { id: 'center', type: 'image_process', center_cell: OTHER_CELL, context: {} },
        { id: 'none', type: 'image_process' },
      ]);
      assert.equal(imageInput(j, 'all').h3_cell, CONTEXT_CELL);
      assert.equal(imageInput(j, 'center').h3_cell, OTHER_CELL);
      assert.equal(imageInput(j, 'none').h3_cell, JOB_CELL);
    });

    it(`runs ${DEFAULT_IMAGE_OPERATION} by default and leaves absent dates out`, () => {
      assert.equal(DEFAULT_IMAGE_OPERATION, 'ndvi');
      const input = imageInput(job([{ id: 'scene', type: 'image_process' }]), 'scene');
      assert.deepEqual(input, { job_id: 'job-1', step_id: 'scene', operation: 'ndvi', h3_cell: JOB_CELL });
      assert.equal('date_from' in input, false);
      assert.equal('date_to' in input, false);
    });

    it('passes the requested operation and dates through', () => {
      const j = job([
        {
          id: 'scene',
          type: 'image_process',
          operation: 'true_color',
          context: { date_from: '2026-01-01', date_to: '2026-02-01' },
        },
      ]);
      assert.deepEqual(imageInput(j, 'scene'), {
        job_id: 'job-1',
        step_id: 'scene',
        operation: 'true_color',
        h3_cell: JOB_CELL,
        date_from: '2026-01-01',
        date_to: '2026-02-01',
      });
    });

    it('passes a band_math expression through, and no expression key otherwise (recorded inputs keep their shape)', () => {
      const j = job([
        { id: 'math', type: 'image_process', operation: 'band_math', expression: '(B08-B04)/(B08+B04)' },
        { id: 'ndvi', type: 'image_process', operation: 'ndvi' },
      ]);
      assert.deepEqual(imageInput(j, 'math'), {
        job_id: 'job-1',
        step_id: 'math',
        operation: 'band_math',
        h3_cell: JOB_CELL,
        expression: '(B08-B04)/(B08+B04)',
      });
      assert.equal('expression' in imageInput(j, 'ndvi'), false);
    });

    it('passes one date without inventing the other', () => {
      const j = job([{ id: 'scene', type: 'image_process', context: { date_to: '2026-02-01' } }]);
      const input = imageInput(j, 'scene');
      assert.equal(input.date_to, '2026-02-01');
      assert.equal('date_from' in input, false);
    });
  });

  it('gives sensor_fusion its quantity, cell (context, else the job cell), rings and window fields', () => {
    const j = job([
      { id: 'fuse', type: 'sensor_fusion', quantity: 'pm10' },
      {
        id: 'there',
        type: 'sensor_fusion',
        quantity: 'no2',
        rings: 2,
        context: { h3_cell: '851e8053fffffff', epoch: 5 },
      },
    ]);
    const fuse = stepActivityInput(j, stepOf(j, 'fuse'), []);
    assert.deepEqual(fuse, {
      type: 'sensor_fusion',
      input: { job_id: j.job_id, step_id: 'fuse', quantity: 'pm10', h3_cell: j.h3_cell, rings: 0, job_epoch: j.epoch },
    });
    const there = stepActivityInput(j, stepOf(j, 'there'), []).input as unknown as Record<string, unknown>;
    assert.equal(there.h3_cell, '851e8053fffffff');
    assert.equal(there.rings, 2);
    assert.equal(there.epoch, 5);
  });

  it('names a distinct step activity for every step type that has an activity input', () => {
    const j = job(
      STEP_TYPES.map((type) => ({ id: type, type, ...(type === 'sensor_fusion' ? { quantity: 'pm2_5' } : {}) })),
    );
    const types = j.steps.map((s) => stepActivityInput(j, s, []).type);
    assert.deepEqual(types, [...STEP_TYPES]);
    const names = types.map((t) => STEP_ACTIVITY[t]);
    assert.ok(names.every((n) => typeof n === 'string' && n.length > 0));
    assert.equal(new Set(names).size, names.length);
  });
});

describe('job steps: tools and scheduling', () => {
  it("requires an inference step's tools of its worker", () => {
    assert.deepEqual(requiredTools({ id: 'a', type: 'inference', tools: ['web-search', 'file-ops'] }), [
      'web-search',
      'file-ops',
    ]);
  });

  it('requires no tools of an inference step without tools', () => {
    assert.deepEqual(requiredTools({ id: 'a', type: 'inference' }), []);
  });

  it('refuses tools on any step type that does not require them (a field of another type)', () => {
    for (const type of STEP_TYPES.filter((t) => !('tools' in STEP_TYPE_SPECS[t].fields))) {
      const parsed = requestStepSchema.safeParse({ id: 'a', type, tools: ['web-search'] });
      assert.equal(parsed.success, false, type);
      assert.match(parsed.error!.issues[0]!.message, new RegExp(`"tools" is not a field of a ${type} step`));
    }
  });

  it('keeps only the id, type, dependency and estimate for the scheduler', () => {
    const full: JobStep = {
      id: 'ask',
      type: 'inference',
      depends_on: 'ndvi',
      model: 'tinyllama',
      messages: [{ role: 'user', content: 'hi' }],
      tools: ['web-search'],
      estimate: 0.0042,
    };
    assert.deepEqual(toScheduledStep(full), { id: 'ask', type: 'inference', depends_on: 'ndvi', estimate: 0.0042 });
  });

  it('keeps an absent dependency absent for the scheduler', () => {
    const scheduled = toScheduledStep({ id: 'map', type: 'tile_render', estimate: 0.0001 });
    assert.equal(scheduled.depends_on, undefined);
    assert.equal(scheduled.estimate, 0.0001);
  });
});
