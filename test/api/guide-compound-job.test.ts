/**
 * docs/guide.md "Compound jobs", followed for real: the guide's multi-step job (the JSON block after the
 * `<!-- guide-compound-job -->` marker), written to a file and sent with `geofabric submit` to a gateway whose
 * STAC catalog, tile server and model runtime are local fakes. It must be accepted and run every step in
 * `depends_on` order; without its dates it fails 404 no_scenes saying how to widen the window, as the guide says.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { TileConfig } from '../../activities/tiles/index.js';
import { writeKeyFile } from '../../bin/key-file.js';
import { submitCommand } from '../../bin/submit.js';
import { generateKeyPair } from '../../core/identity.js';
import { TILE_STYLES } from '../../core/tile-styles.js';
import { startFakeRuntime, type FakeRuntime } from '../helpers/fake-openai-runtime.js';
import { startGateway } from '../helpers/gateway.js';
import { TEST_NOW, startImageryCatalog, type ImageryCatalog } from '../helpers/imagery-fixtures.js';
import { startXyzServer, type XyzServer } from '../helpers/xyz-server.js';

const GUIDE = readFileSync(resolve(import.meta.dirname, '../../docs/guide.md'), 'utf8');
const WORKER_MODEL = 'lfm2.5-1.2b-instruct';
const DAY = 86_400_000;

function guideJob(): Record<string, unknown> & { steps: Record<string, unknown>[] } {
  const block = /<!-- guide-compound-job -->\s*```json\n([\s\S]*?)```/.exec(GUIDE);
  assert.ok(block, 'docs/guide.md has the compound job example');
  return JSON.parse(block[1]!) as Record<string, unknown> & { steps: Record<string, unknown>[] };
}

interface Answer {
  status?: string;
  error?: string;
  detail?: string;
  steps?: { id: string; status: string; record_id: string | null }[];
  job?: { steps: { id: string; status: string }[] };
}

describe('the guide’s compound job (docs/guide.md, submitted for real)', function () {
  this.timeout(20_000);
  let catalog: ImageryCatalog;
  let xyz: XyzServer;
  let runtime: FakeRuntime;
  let dir: string;
  const gateways: Awaited<ReturnType<typeof startGateway>>[] = [];

  before(async () => {
    catalog = await startImageryCatalog();
    catalog.stac.items = [catalog.item('S2A_rome', 10, catalog.romeAssets())]; // 2026-02-10
    xyz = await startXyzServer();
    runtime = await startFakeRuntime(WORKER_MODEL, () => ({
      content: JSON.stringify({ text: 'Villa Borghese is green.', locations: [{ name: 'Villa Borghese' }] }),
      usage: { prompt_tokens: 100, completion_tokens: 20 },
    }));
    dir = mkdtempSync(join(tmpdir(), 'geofabric-guide-job-'));
    writeKeyFile(join(dir, 'alice.json'), generateKeyPair());
  });
  after(async () => {
    for (const gw of gateways) await gw.close();
    await runtime.close();
    await catalog.stac.close();
    await xyz.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function submit(job: unknown, nowMs: number): Promise<{ code: number; answer: Answer }> {
    const gw = await startGateway({
      clock: () => nowMs,
      imagery: { stacUrl: catalog.stac.url },
      tiles: {
        templates: Object.fromEntries(TILE_STYLES.map((s) => [s, xyz.template('png')])) as TileConfig['templates'],
        timeoutMs: 1000,
      },
      swarm: { workerRuntimeUrl: runtime.url, workerModels: [WORKER_MODEL] },
    });
    gateways.push(gw);
    const file = join(dir, 'job.json');
    writeFileSync(file, JSON.stringify(job, null, 2));
    const out: Answer[] = [];
    const code = await submitCommand([file, '--key', join(dir, 'alice.json'), '--url', gw.url], (v) =>
      out.push(v as Answer),
    );
    return { code, answer: out[0]! };
  }

  it('is accepted and runs ndvi → explain → map in depends_on order', async () => {
    const job = guideJob();
    assert.deepEqual(
      job.steps.map((s) => [s.id, s.depends_on ?? null]),
      [
        ['ndvi', null],
        ['explain', 'ndvi'],
        ['map', 'explain'],
      ],
    );
    const { code, answer } = await submit(job, TEST_NOW + 60_000);
    assert.equal(code, 0, JSON.stringify(answer));
    assert.equal(answer.status, 'complete');
    assert.deepEqual(
      answer.steps!.map((s) => [s.id, s.status]),
      [
        ['ndvi', 'complete'],
        ['explain', 'complete'],
        ['map', 'complete'],
      ],
    );
  });

  it('without its dates searches the last 30 days only, and no_scenes says how to widen the window', async () => {
    const job = guideJob();
    const ndvi = job.steps[0]!;
    delete ndvi.context;
    // Two months after the scene: the default window (the last 30 days) holds none.
    const { code, answer } = await submit(job, TEST_NOW + 60 * DAY);
    assert.equal(code, 1);
    assert.equal(answer.error, 'no_scenes', JSON.stringify(answer));
    const to = new Date(TEST_NOW + 60 * DAY).toISOString();
    const from = new Date(TEST_NOW + 30 * DAY).toISOString();
    assert.ok(answer.detail!.includes(`between ${from} and ${to}`), answer.detail);
    assert.match(answer.detail!, /context\.date_from not given: the last 30 days/);
    assert.match(answer.detail!, /widen the window with context\.date_from and context\.date_to/);
    assert.deepEqual(
      answer.job!.steps.map((s) => [s.id, s.status]),
      [
        ['ndvi', 'failed'],
        ['explain', 'skipped'],
        ['map', 'skipped'],
      ],
    );
  });
});
