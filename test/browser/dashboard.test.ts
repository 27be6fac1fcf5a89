/**
 * The dashboard in a real browser : Debian's Chromium driven by playwright-core
 * against a gateway seeded with workers, jobs, inferences and a sealed epoch (test/helpers/dashboard-seed.ts).
 * It sees the worker map drawn over tiles from our own tile endpoint, the audit table and its filters, the jobs,
 * a proof verified in the page (and a tampered, an unknown and a pending one not), the tile stats and a
 * compliance report, with no console errors. Screenshots go to test-artifacts/dashboard/.
 *
 * Skipped, saying so, only when no Chromium is installed (CI installs it: `apt-get install -y chromium`).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import sharp from 'sharp';
import type { ProofRecord } from '../../core/proof-types.js';
import { DASHBOARD_OPERATOR_TOKEN, startSeededDashboard, type SeededDashboard } from '../helpers/dashboard-seed.js';

const ARTIFACTS = resolve(import.meta.dirname, '../../test-artifacts/dashboard');
/** CHROMIUM_PATH names the browser; else Debian's. */
const CHROMIUM_CANDIDATES = process.env.CHROMIUM_PATH
  ? [process.env.CHROMIUM_PATH]
  : ['/usr/bin/chromium', '/usr/bin/chromium-browser'];
const CHROMIUM = CHROMIUM_CANDIDATES.find((path) => existsSync(path));
/** Every wait is bounded: a broken page fails in seconds, not at mocha's timeout. */
const WAIT_MS = 20_000;

describe('the dashboard in Chromium (playwright-core)', function () {
  this.timeout(120_000);
  let seeded: SeededDashboard;
  let context: BrowserContext;
  let page: Page;
  let profile: string;
  const consoleErrors: string[] = [];
  /** Tile answers the page got from our tile endpoint: status and content type. */
  const tiles: { url: string; status: number; type: string | null; cache: string | null }[] = [];

  const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
  const open = async (hash: string) => {
    await page.goto(`${seeded.url}/dashboard${hash}`);
    await page.waitForSelector('#summary:has-text("Epoch")', { timeout: WAIT_MS });
  };
  const rows = (selector: string) => page.locator(selector);

  before(async function () {
    if (CHROMIUM === undefined) {
      const missing = `no Chromium at ${CHROMIUM_CANDIDATES.join(', ')} (install it with \`apt-get install -y chromium\`, or set CHROMIUM_PATH)`;
      // CI sets REQUIRE_BROWSER=1 after installing Chromium, so a broken install fails instead of skipping quietly.
      if (process.env.REQUIRE_BROWSER === '1') throw new Error(`REQUIRE_BROWSER=1 but ${missing}`);
      console.warn(`      skipping the browser test: ${missing}`);
      this.skip();
    }
    mkdirSync(ARTIFACTS, { recursive: true });
    seeded = await startSeededDashboard();
    profile = mkdtempSync(join(tmpdir(), 'geofabric-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      timeout: WAIT_MS,
      viewport: { width: 1400, height: 1000 },
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    context.setDefaultTimeout(WAIT_MS);
    // The operator token, as if entered in the header form (dashboard/api.js keeps it in sessionStorage).
    await context.addInitScript(
      (token) =>
        (
          globalThis as unknown as { sessionStorage: { setItem(key: string, value: string): void } }
        ).sessionStorage.setItem('geofabric.operator_token', token),
      DASHBOARD_OPERATOR_TOKEN,
    );
    page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(`${message.text()} (${message.location().url})`);
    });
    page.on('pageerror', (error) => consoleErrors.push(`uncaught: ${error.message}`));
    page.on('response', (response) => {
      if (/\/v1\/tiles\/[0-9a-f]{15}\/\d+\/[a-z-]+\.png$/.test(response.url())) {
        tiles.push({
          url: response.url(),
          status: response.status(),
          type: response.headers()['content-type'] ?? null,
          cache: response.headers()['x-svc-cache'] ?? null,
        });
      }
    });
  });

  after(async () => {
    await context?.close().catch(() => undefined);
    if (profile) rmSync(profile, { recursive: true, force: true });
    await seeded?.close();
  });

  it('shows the swarm: the map canvas over our tiles, the seeded cells, and every worker in the list', async () => {
    await open('#swarm');
    const online = seeded.workers.length;
    // One polygon per distinct cell of the online workers (the seeded five are in five cells).
    await page.waitForSelector(`#map[data-state="loaded"][data-cells="${online}"]`);
    await page.waitForSelector('#map[data-idle="true"]');
    const canvas = await page.locator('#map canvas.maplibregl-canvas').boundingBox();
    assert.ok(canvas && canvas.width > 300 && canvas.height > 300, JSON.stringify(canvas));

    // The basemap came from the gateway's own tile endpoint (addressed by H3 cell), not from anywhere else.
    assert.ok(tiles.length > 0, 'the map loaded no tile from /v1/tiles');
    for (const tile of tiles) {
      assert.ok(tile.url.startsWith(`${seeded.url}/v1/tiles/`), tile.url);
      assert.equal(tile.status, 200, tile.url);
      assert.equal(tile.type, 'image/png', tile.url);
      assert.match(tile.cache ?? '', /^(HIT|MISS)$/);
    }
    assert.ok(seeded.xyz.count() > 0, 'the tile upstream was never asked');
    // The canvas is drawn (tiles are noise images): far from one flat colour.
    const pixels = await sharp(await page.locator('#map').screenshot()).stats();
    assert.ok(
      pixels.channels.some((c) => c.stdev > 20),
      JSON.stringify(pixels.channels.map((c) => c.stdev)),
    );

    for (const worker of seeded.workers) {
      const row = rows(`#workers-table tr[data-pk="${worker.pk}"]`);
      assert.equal(await row.count(), 1, worker.name);
      assert.match((await row.innerText()).replace(/\s+/g, ' '), new RegExp(`${worker.cell}.*${worker.tier}`));
    }
    const cards = await page.locator('#swarm-cards').innerText();
    assert.match(cards, /Workers online\s+4/); // five registered online, one of them a relay
    assert.match(cards, /Tier 1 · CPU\s+2/);
    await shot('swarm');
  });

  it('lists the seeded inferences in the audit table, and filters them by provider, model and text', async () => {
    const operator = { authorization: `Bearer ${DASHBOARD_OPERATOR_TOKEN}` };
    const recent = (await seeded.gw.get('/svc/inference/recent?limit=100', operator)).body as {
      entries: { job_id: string; job_hash: string; provider: string; model: string }[];
    };
    assert.equal(recent.entries.length, 4);
    await open('#audit');
    const all = rows('#audit-rows tbody tr[data-job-id]');
    await page.waitForSelector(`#audit-count:has-text("Showing 4 of 4")`);
    assert.deepEqual(
      await all.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-job-id'))),
      recent.entries.map((e) => e.job_id),
    );
    const text = (await page.locator('#audit-rows').innerText()).replace(/\s+/g, ' ');
    for (const expected of ['backbone', 'worker', 'llama-3.3-70b-versatile', 'lfm2.5-1.2b-instruct', '31 12', '18 7']) {
      assert.ok(text.includes(expected), `${expected} in ${text}`);
    }
    await shot('audit');

    await page.selectOption('#audit-provider', 'worker');
    await page.waitForSelector('#audit-count:has-text("Showing 1 of 4")');
    assert.deepEqual(await all.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-provider'))), ['worker']);
    await page.selectOption('#audit-provider', '');

    await page.selectOption('#audit-model', 'llama-3.3-70b-versatile');
    await page.waitForSelector('#audit-count:has-text("Showing 3 of 4")');
    assert.deepEqual(
      new Set(await all.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-model')))),
      new Set(['llama-3.3-70b-versatile']),
    );
    await page.selectOption('#audit-model', '');

    const target = recent.entries[1]!;
    await page.fill('#audit-text', target.job_hash.slice(0, 12));
    await page.waitForSelector('#audit-count:has-text("Showing 1 of 4")');
    assert.equal(await all.first().getAttribute('data-job-id'), target.job_id);
    await shot('audit-filtered');

    await page.fill('#audit-text', 'no-such-thing');
    await page.waitForSelector('#audit-rows tr.empty:has-text("No inference matches")');
    await page.fill('#audit-text', '');
  });

  it('lists the jobs with steps and costs, and opens a job with its steps, settlement and tile', async () => {
    await open('#jobs');
    await page.waitForSelector(`#jobs-rows tr[data-job-id="${seeded.jobIds[0]}"]`);
    const listed = await rows('#jobs-rows tbody tr[data-job-id]').evaluateAll((trs) =>
      trs.map((tr) => tr.getAttribute('data-job-id')),
    );
    assert.deepEqual(listed, [...seeded.jobIds].reverse());
    const chain = seeded.jobIds[2]!;
    assert.match(
      await rows(`#jobs-rows tr[data-job-id="${chain}"]`).innerText(),
      /inference → tile_render[\s\S]*0\.0002/,
    );

    await page.click(`#jobs-rows tr[data-job-id="${chain}"] button`);
    await page.waitForSelector('#job-steps tr[data-step-id="map"]');
    assert.equal(await rows('#job-steps tbody tr[data-step-id]').count(), 2);
    const detail = (await page.locator('#job-detail').innerText()).replace(/\s+/g, ' ');
    assert.match(detail, /Total 0\.0002 credits/);
    assert.match(detail, /Step map 0\.0001 credits/);
    assert.ok(await page.locator('#job-detail img[alt="Tile rendered by step map"]').isVisible());
    // The job's cell's telemetry (dashboard/telemetry-view.js): no device reports there in the seed.
    await page.waitForSelector('#job-telemetry #cell-readings');
    assert.match(await page.locator('#job-telemetry').innerText(), /Telemetry of cell 861e8050fffffff[\s\S]*No device/);
    await shot('jobs');
  });

  it('without the operator token, the jobs table counts the jobs and says how to list them', async () => {
    await open('#jobs');
    await page.waitForSelector(`#jobs-rows tr[data-job-id="${seeded.jobIds[0]}"]`);
    // Forget the token through the header form, as an operator would (an empty token forgets it).
    await page.fill('#operator-token', '');
    await page.press('#operator-token', 'Enter');
    const n = seeded.jobIds.length;
    await page.waitForSelector(`#jobs-rows:has-text("${n} recent jobs")`);
    const text = (await page.locator('#jobs-table').innerText()).replace(/\s+/g, ' ');
    assert.match(text, /enter the operator token \(the gateway's OPERATOR_TOKEN\)/);
    assert.doesNotMatch(text, /No job has been submitted/);
    assert.equal(await page.locator('#jobs-error').innerText(), '', 'no error line beside the table');
    await page.fill('#operator-token', DASHBOARD_OPERATOR_TOKEN);
    await page.press('#operator-token', 'Enter');
    await page.waitForSelector(`#jobs-rows tr[data-job-id="${seeded.jobIds[0]}"]`);
  });

  it('verifies a sealed record in the page and shows the path from the record to the root', async () => {
    const id = seeded.sealedRecordIds[2]!;
    const bundle = (await seeded.gw.get(`/store/proof/${encodeURIComponent(id)}`)).body as {
      proof: { leaf_index: number; tree_size: number; hashes: string[] };
      seal: { merkle_root: string };
    };
    await open('#proofs');
    await page.fill('#proof-id', id);
    await page.click('#proof-form button[type="submit"]');
    await page.waitForSelector('#proof-verdict[data-verdict="verified"]');
    assert.match(await page.locator('#proof-verdict').innerText(), /^Verified/);
    for (const check of [
      'record hash',
      'record signature',
      'seal hash',
      'seal signature',
      'seal covers the record',
      'inclusion path',
    ]) {
      assert.equal(await page.locator(`.checks li.pass[data-check="${check}"]`).count(), 1, check);
    }
    const steps = rows('#merkle-path li[data-kind="step"] code.sibling');
    assert.deepEqual(await steps.allInnerTexts(), bundle.proof.hashes);
    assert.equal(
      await page.locator('#merkle-path li[data-kind="root"].pass code').first().innerText(),
      bundle.seal.merkle_root,
    );
    assert.match(
      await page.locator('.merkle h4').innerText(),
      new RegExp(`leaf ${bundle.proof.leaf_index} of ${bundle.proof.tree_size}`),
    );
    // The epochs table shows the sealed epoch with its seal.
    await page.waitForSelector(`#epochs-rows tr[data-epoch="${seeded.sealedEpoch}"]:has-text("sealed")`);
    await shot('proof-verified');
  });

  it('fails a record tampered with in the store, naming the broken hash', async () => {
    const id = seeded.sealedRecordIds[4]!;
    const row = seeded.db.prepare('SELECT json FROM proof_records WHERE id = ?').get(id) as { json: string };
    const record = JSON.parse(row.json) as ProofRecord;
    (record.payload as { tokens_out?: number }).tokens_out = 9999; // an attacker with SQL access edits the record
    seeded.db.prepare('UPDATE proof_records SET json = ? WHERE id = ?').run(JSON.stringify(record), id);

    await open(`#proofs/${id}`);
    await page.waitForSelector('#proof-verdict[data-verdict="failed"]');
    assert.match(await page.locator('#proof-verdict').innerText(), /record hash: the record hashes to/);
    assert.equal(await page.locator('.checks li.fail[data-check="record hash"]').count(), 1);
    await shot('proof-tampered');
  });

  it('fails an unknown record id, and calls a record of the open epoch pending', async () => {
    await open('#proofs/no-such-record');
    await page.waitForSelector('#proof-verdict[data-verdict="failed"]');
    assert.match(await page.locator('#proof-verdict').innerText(), /no record with id "no-such-record"/);
    await shot('proof-unknown');

    await page.fill('#proof-id', seeded.pendingRecordId);
    await page.click('#proof-form button[type="submit"]');
    await page.waitForSelector('#proof-verdict[data-verdict="pending"]');
    assert.match(await page.locator('#proof-verdict').innerText(), /^Pending: epoch \d+ is not sealed yet/);
    await shot('proof-pending');
  });

  it('shows the tile stats, including the tiles the map just loaded', async () => {
    await open('#tiles');
    await page.waitForSelector('#tiles-by-style tr[data-style="osm-standard"]');
    const cell = async (n: number) =>
      Number(
        (await page.locator('#tiles-by-style tr[data-style="osm-standard"] td').nth(n).innerText()).replace(/,/g, ''),
      );
    const shown = (await cell(1)) + (await cell(2)); // hits + misses
    // The map's tiles were counted by the server (the browser may have answered repeats from its cache).
    const served = (await seeded.gw.get('/v1/tiles/stats?hours=24')).body as {
      buckets: { styles: Record<string, { hits: number; misses: number }> }[];
    };
    const counted = served.buckets.reduce(
      (sum, b) => sum + b.styles['osm-standard']!.hits + b.styles['osm-standard']!.misses,
      0,
    );
    assert.ok(shown >= 1 && shown <= counted, `page shows ${shown}, server counted ${counted}`);
    await shot('tiles');
  });

  it("shows an agent's compliance report from the perception service", async () => {
    await open(`#compliance/${seeded.agent.publicKey}`);
    await page.waitForSelector('#compliance-score');
    assert.match(await page.locator('#compliance-score').innerText(), /\d+(\.\d+)? \/ 100/);
    assert.match(await page.locator('#compliance-chain').innerText(), /valid/);
    assert.match(await page.locator('#compliance-ops tr[data-tool="perception_weather"]').innerText(), /2/);
    assert.match(await page.locator('#compliance-violations').innerText(), /No violations/);
    await shot('compliance');

    await open('#compliance/not-a-key');
    await page.waitForSelector('#compliance-error');
    assert.match(await page.locator('#compliance-error').innerText(), /invalid_public_key/);
  });

  it('logged no console errors beyond the refusals it asked for', () => {
    // The two refusals the tests provoke are logged by Chromium as failed loads; nothing else may be.
    const expected =
      /status of (404|400) .*\((.*\/store\/proof\/no-such-record|.*\/dashboard\/api\/compliance\/not-a-key)\)$/;
    assert.deepEqual(
      consoleErrors.filter((e) => !expected.test(e)),
      [],
    );
  });
});
