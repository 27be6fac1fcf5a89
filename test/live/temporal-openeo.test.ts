import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import proj4 from 'proj4';
import { openEoWorkflowId } from '../../api/openeo/batch-runner.js';
import { jobQueue, type QueueNaming } from '../../core/task-queues.js';
import { romeCellInUtm } from '../helpers/cog-fixture.js';
import type { startGateway } from '../helpers/gateway.js';
import { TEST_NOW, startImageryCatalog, type ImageryCatalog } from '../helpers/imagery-fixtures.js';
import { installTestRuntime } from '../workflows/temporal-runtime.js';
import { requireEnv, startTemporalGateway } from './live-env.js';

const BASE = '/openeo/1.2';
const KEY = 'gf_openeo_temporal_key_0123456789';
const AUTH = { authorization: `Bearer basic//${KEY}` };

// openEO batch jobs on a real Temporal server (docs/protocol.md §16.11): a start is an openEoBatchJob workflow on
// the job queue, whose local activity runs the graph; the job's status is its JobStatus search attribute.
describe('openEO batch jobs on the Temporal dev server (live)', function () {
  this.timeout(90_000);
  const address = requireEnv('TEMPORAL_ADDRESS');
  const namespace = process.env.TEMPORAL_NAMESPACE || 'default';
  const naming: QueueNaming = { prefix: `gf-test-${randomUUID().slice(0, 8)}`, routingResolution: 5 };
  let catalog: ImageryCatalog;
  let gw: Awaited<ReturnType<typeof startGateway>>;
  let client: Client;
  let close: (() => Promise<void>) | undefined;

  before(async () => {
    installTestRuntime();
    catalog = await startImageryCatalog();
    catalog.stac.items = [5, 12].map((day) => catalog.item(`S2B_ROME_${day}`, day, catalog.romeAssets()));
    ({ gw, client, close } = await startTemporalGateway({
      address,
      namespace,
      naming,
      gateway: { clock: () => TEST_NOW, imagery: { stacUrl: catalog.stac.url }, config: { apiKeys: [KEY] } },
    }));
  });
  after(async () => {
    await close?.();
    await catalog?.stac.close();
  });

  it('runs a started job as one openEoBatchJob workflow and finishes it with its proof record', async () => {
    const { cx, cy } = romeCellInUtm();
    const toWgs = proj4('+proj=utm +zone=33 +datum=WGS84 +units=m +no_defs', '+proj=longlat +datum=WGS84 +no_defs');
    const [west, south] = toWgs.forward([cx - 200, cy - 1200]) as [number, number];
    const [east, north] = toWgs.forward([cx + 200, cy - 800]) as [number, number];
    const graph = {
      load: {
        process_id: 'load_collection',
        arguments: {
          id: 'SENTINEL2_L2A',
          spatial_extent: { west, south, east, north },
          temporal_extent: ['2026-02-01', '2026-03-01'],
          bands: ['B04', 'B08'],
        },
      },
      ndvi: { process_id: 'ndvi', arguments: { data: { from_node: 'load' } } },
      save: { process_id: 'save_result', arguments: { data: { from_node: 'ndvi' }, format: 'JSON' }, result: true },
    };
    const created = await gw.request('POST', `${BASE}/jobs`, {
      body: { process: { process_graph: graph } },
      headers: AUTH,
    });
    assert.equal(created.status, 201, created.text);
    const id = created.headers.get('openeo-identifier')!;
    assert.equal((await gw.request('POST', `${BASE}/jobs/${id}/results`, { headers: AUTH })).status, 202);

    const handle = client.workflow.getHandle(openEoWorkflowId(id, 1));
    assert.deepEqual(await handle.result(), { status: 'finished' });
    const described = await handle.describe();
    assert.equal(described.type, 'openEoBatchJob');
    assert.equal(described.taskQueue, jobQueue(naming));
    let status = '';
    for (let i = 0; i < 40 && status !== 'finished'; i++) {
      status = ((await gw.get(`${BASE}/jobs/${id}`, AUTH)).body as { status: string }).status;
      if (status !== 'finished') await sleep(50);
    }
    assert.equal(status, 'finished');
    const results = (await gw.get(`${BASE}/jobs/${id}/results`, AUTH)).body as {
      assets: Record<string, { 'geofabric:record_id': string }>;
    };
    const record = await gw.get(`/store/proof/${results.assets['result.json']!['geofabric:record_id']}`);
    assert.equal(record.status, 200);
  });
});
