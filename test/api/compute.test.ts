import assert from 'node:assert/strict';
import { generateKeyPair } from '../../core/identity.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { inferenceJob, signJob } from '../helpers/jobs.js';

const alice = generateKeyPair();

describe('POST /v1/compute after the gates (no upstreams configured)', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.close());

  const post = async (job: Record<string, unknown>) => {
    const { body, headers } = signJob(alice, job);
    return gw.post('/v1/compute', body, headers);
  };
  const error = (res: { body: unknown }) => (res.body as { error: string }).error;

  it('answers 503 no_workers with retry-after when neither a worker nor a backbone can take the inference', async () => {
    const res = await post(inferenceJob('three parks in Rome'));
    assert.equal(res.status, 503);
    assert.equal(error(res), 'no_workers');
    assert.equal(res.headers.get('retry-after'), '30');
    const body = res.body as { job_id: string; step_id: string; job: { status: string; steps: { status: string }[] } };
    assert.equal(body.step_id, 'ask');
    assert.equal(body.job.status, 'failed');
    assert.deepEqual(
      body.job.steps.map((s) => s.status),
      ['failed'],
    );
    assert.equal(((await gw.get(`/v1/compute/${body.job_id}`)).body as { status: string }).status, 'failed');
  });

  it('runs the satellite → AI → map chain of docs/protocol.md §4.1 note 4 until its first step fails (catalog unreachable)', async () => {
    const res = await post({
      h3_cell: '861e8050fffffff',
      steps: [
        { id: 'ndvi', type: 'image_process', operation: 'ndvi' },
        {
          id: 'explain',
          type: 'inference',
          depends_on: 'ndvi',
          messages: [{ role: 'user', content: 'where is it dry?' }],
        },
        { id: 'map', type: 'tile_render', depends_on: 'explain', zoom: 12, style: 'osm-bright' },
      ],
    });
    assert.equal(res.status, 502, res.text);
    assert.equal(error(res), 'upstream_unavailable');
    const body = res.body as {
      step_id: string;
      job: { steps: { status: string }[]; settlement: { total_credits: number } };
    };
    assert.equal(body.step_id, 'ndvi');
    assert.deepEqual(
      body.job.steps.map((s) => s.status),
      ['failed', 'skipped', 'skipped'],
    );
    assert.equal(body.job.settlement.total_credits, 0, 'nothing ran, nothing is charged (not even the proof)');
  });

  it('refuses a sensor_fusion step that names no quantity', async () => {
    const res = await post({ steps: [{ id: 's', type: 'sensor_fusion' }] });
    assert.equal(res.status, 400);
    assert.equal(error(res), 'invalid_request');
  });

  it('refuses an unknown image_process operation', async () => {
    const res = await post({ steps: [{ id: 'f', type: 'image_process', operation: 'flood_segment' }] });
    assert.equal(res.status, 400);
    assert.equal(error(res), 'invalid_request');
  });

  it('rejects an unknown model with invalid_model', async () => {
    const res = await post({ steps: [{ id: 'a', type: 'inference', model: 'gpt-17' }] });
    assert.equal(res.status, 400);
    assert.equal(error(res), 'invalid_model');
  });

  it('rejects a job whose estimate exceeds budget_credits with 402', async () => {
    const res = await post(inferenceJob('hi', { budget_credits: 0.0001 }));
    assert.equal(res.status, 402);
    assert.equal(error(res), 'budget_exceeded');
    assert.match((res.body as { detail: string }).detail, /exceeds budget_credits 0.0001/);
  });

  it('rejects unknown fields and wrong types with invalid_request naming the field', async () => {
    const res = await post(inferenceJob('hi', { priority: 'high' }));
    assert.equal(res.status, 400);
    assert.equal(error(res), 'invalid_request');
    const wrongType = await post(inferenceJob('hi', { budget_credits: 'lots' }));
    assert.equal(wrongType.status, 400);
    assert.match((wrongType.body as { detail: string }).detail, /^budget_credits/);
  });

  it('rejects an empty step list', async () => {
    const res = await post({ steps: [] });
    assert.equal(res.status, 400);
    assert.equal(error(res), 'invalid_request');
  });
});
