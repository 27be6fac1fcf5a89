import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';
import { createImageryActivities, type ImageryActivities } from '../../../activities/imagery/index.js';
import { createRecordBatcher } from '../../../activities/proof/record-batcher.js';
import { DEFAULT_EPOCH_GENESIS_MS } from '../../../core/epoch.js';
import { generateKeyPair } from '../../../core/identity.js';
import { openSqlite } from '../../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../../store/sqlite/proof-store.js';
import type { ProofStore } from '../../../store/proof-store.js';
import { ROME_CELL } from '../../helpers/cog-fixture.js';
import {
  SHARES,
  S3_ASSETS,
  TEST_NOW,
  startImageryCatalog,
  type ImageryCatalog,
} from '../../helpers/imagery-fixtures.js';

describe('imagery activity: processImage', () => {
  let catalog: ImageryCatalog;
  let store: ProofStore;
  let writer: ReturnType<typeof createRecordBatcher>;
  let activities: ImageryActivities;

  before(async () => {
    catalog = await startImageryCatalog();
  });
  after(() => catalog.stac.close());
  beforeEach(() => {
    store = createSqliteProofStore(openSqlite(':memory:'));
    const clock = () => TEST_NOW;
    writer = createRecordBatcher({ store, signer: generateKeyPair(), clock, genesisMs: DEFAULT_EPOCH_GENESIS_MS });
    activities = createImageryActivities({
      config: { stacUrl: catalog.stac.url, collection: 'sentinel-2-l2a', timeoutMs: 2000, userAgent: 'geofabric-test' },
      proofs: writer,
      clock,
    });
    catalog.stac.items = [
      catalog.item('S2A_0210', 10, catalog.romeAssets(), { 'eo:cloud_cover': 2, ...SHARES }),
      catalog.item('S2B_0220', 20, S3_ASSETS, { 'eo:cloud_cover': 30, ...SHARES }),
    ];
  });
  afterEach(() => writer.close());

  const step = { job_id: 'job-1', step_id: 'ndvi', operation: 'ndvi', h3_cell: ROME_CELL, date_from: '2026-02-01' };

  it('computes, writes one durable record with an id from job and step, and answers with it', async () => {
    const out = await activities.processImage(step);
    assert.equal(out.record_id, 'imagery:job-1:ndvi');
    assert.equal(out.operation, 'ndvi');
    assert.equal(out.result.method, 'pixels');
    assert.equal(out.result.meanNdvi, 0.6);
    const record = await store.getRecord('imagery:job-1:ndvi'); // durable before the activity returned
    assert.ok(record);
    assert.equal(record.payload_type, 'imagery/ndvi');
    const payload = record.payload as Record<string, unknown>;
    assert.equal(payload.job_id, 'job-1');
    assert.equal(payload.step_id, 'ndvi');
    assert.equal(payload.cost, out.cost);
  });

  it('is idempotent: the same job and step twice leave one record and the same answer', async () => {
    const first = await activities.processImage(step);
    const second = await activities.processImage(step);
    assert.equal(second.record_id, first.record_id);
    assert.deepEqual(second.result, first.result);
    const { records } = await store.queryRecords({ collection: 'imagery', limit: 100 });
    assert.equal(records.length, 1);
  });

  it('hashes job and step ids outside the record id alphabet', async () => {
    const out = await activities.processImage({ ...step, job_id: 'job/1', step_id: 'a:b', operation: 'scene_search' });
    assert.match(out.record_id, /^imagery:[0-9a-f]{64}$/);
  });

  it('runs every operation', async () => {
    for (const operation of ['ndvi', 'cloud_mask', 'scene_search', 'atmospheric_correction']) {
      const out = await activities.processImage({ ...step, step_id: operation, operation });
      assert.equal(out.operation, operation);
    }
    const { records } = await store.queryRecords({ collection: 'imagery', limit: 100 });
    assert.deepEqual(records.map((r) => r.payload_type).sort(), [
      'imagery/atmospheric_correction',
      'imagery/cloud_mask',
      'imagery/ndvi',
      'imagery/scene_search',
    ]);
  });

  const failure = async (input: Parameters<ImageryActivities['processImage']>[0]) => {
    try {
      await activities.processImage(input);
    } catch (error) {
      assert.ok(error instanceof ApplicationFailure, String(error));
      return error;
    }
    assert.fail('expected a failure');
  };

  it('fails without retry on business errors: bad operation, bad cell, bad date, empty window', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ operation: 'flood_classify', reference_from: '2026-02-01' }, 'invalid_date'],
      [{ operation: 'ndvi', reference_from: '2026-02-01', reference_to: '2026-02-02' }, 'invalid_request'],
      [{ operation: 'sharpen' }, 'invalid_operation'],
      [{ h3_cell: 'rome' }, 'invalid_cell'],
      [{ date_from: 'last week' }, 'invalid_date'],
      [{ date_from: '2025-01-01', date_to: '2025-01-31' }, 'no_scenes'],
      [{ job_id: '' }, 'invalid_request'],
    ];
    for (const [change, type] of cases) {
      const error = await failure({ ...step, ...change } as typeof step);
      assert.equal(error.type, type, JSON.stringify(change));
      assert.equal(error.nonRetryable, true, type);
    }
  });

  it('says in a no_scenes failure how a job widens the window: the step context dates', async () => {
    const error = await failure({ ...step, date_from: '2025-01-01', date_to: '2025-01-31' });
    assert.equal(error.type, 'no_scenes');
    assert.match(error.message, /between 2025-01-01T00:00:00\.000Z and 2025-01-31T23:59:59\.999Z/);
    assert.match(error.message, /widen the window with context\.date_from and context\.date_to/);
  });

  it('fails retryably when the catalog is down', async () => {
    catalog.stac.faults.searchStatus = 502;
    try {
      const error = await failure(step);
      assert.equal(error.type, 'upstream_unavailable');
      assert.equal(error.nonRetryable, false);
    } finally {
      delete catalog.stac.faults.searchStatus;
    }
  });
});
