/**
 * The dashboard's receipt checker in a real browser (Debian's Chromium, playwright-core): a job receipt pasted,
 * dropped as a file or chosen in the file input is verified in the page (dashboard/receipt-verify.js), each check
 * listed; a tampered, a pending and a wrongly pinned receipt fail naming the check. The receipts are the
 * conformance vectors (test/fixtures/conformance). Screenshots go to test-artifacts/dashboard/.
 *
 * Skipped, saying so, only when no Chromium is installed (CI installs it and sets REQUIRE_BROWSER=1).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { RECEIPT_CHECKS, type JobReceipt } from '../../core/receipt.js';
import { startGateway } from '../helpers/gateway.js';
import { flip } from '../helpers/receipt-tampers.js';

const ROOT = resolve(import.meta.dirname, '../..');
const ARTIFACTS = join(ROOT, 'test-artifacts/dashboard');
const CHROMIUM_CANDIDATES = process.env.CHROMIUM_PATH
  ? [process.env.CHROMIUM_PATH]
  : ['/usr/bin/chromium', '/usr/bin/chromium-browser'];
const CHROMIUM = CHROMIUM_CANDIDATES.find((path) => existsSync(path));
const WAIT_MS = 20_000;
const fixture = (name: string) => readFileSync(join(ROOT, 'test/fixtures/conformance', name), 'utf8');

describe('the dashboard receipt checker in Chromium (playwright-core)', function () {
  this.timeout(120_000);
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  let context: BrowserContext;
  let page: Page;
  let profile: string;
  const consoleErrors: string[] = [];
  const valid = fixture('receipt-valid.json');
  const receipt = JSON.parse(valid) as JobReceipt;

  const verdict = () => page.locator('#receipt-result .verdict').textContent();
  const marks = async () =>
    page.$$eval('#receipt-checks li', (items) => items.map((li) => `${li.getAttribute('data-check')}:${li.className}`));
  const waitVerdict = (kind: 'verified' | 'failed') =>
    page.waitForSelector(`#receipt-result .verdict-${kind}`, { timeout: WAIT_MS });

  before(async function () {
    if (CHROMIUM === undefined) {
      const missing = `no Chromium at ${CHROMIUM_CANDIDATES.join(', ')} (install it, or set CHROMIUM_PATH)`;
      if (process.env.REQUIRE_BROWSER === '1') throw new Error(`REQUIRE_BROWSER=1 but ${missing}`);
      console.warn(`      skipping the browser test: ${missing}`);
      this.skip();
    }
    mkdirSync(ARTIFACTS, { recursive: true });
    gateway = await startGateway();
    profile = mkdtempSync(join(tmpdir(), 'geofabric-chromium-receipt-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      timeout: WAIT_MS,
      viewport: { width: 1400, height: 1000 },
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
    context.setDefaultTimeout(WAIT_MS);
    page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(`${message.text()} (${message.location().url})`);
    });
    page.on('pageerror', (error) => consoleErrors.push(`uncaught: ${error.message}`));
    await page.goto(`${gateway.url}/dashboard#proofs`);
    await page.waitForSelector('#receipt-form');
  });

  after(async () => {
    await context?.close().catch(() => undefined);
    if (profile) rmSync(profile, { recursive: true, force: true });
    await gateway?.close();
  });

  it('a pasted receipt is verified in the page: every check listed and passed', async () => {
    await page.locator('#receipt-text').fill(valid);
    await page.locator('#receipt-text').dispatchEvent('paste');
    await waitVerdict('verified');
    assert.match(String(await verdict()), new RegExp(`^Valid: job ${receipt.job_id} \\(complete\\)`));
    assert.deepEqual(
      await marks(),
      RECEIPT_CHECKS.map((name) => `${name}:pass`),
    );
    await page.locator('#receipt-result').screenshot({ path: join(ARTIFACTS, 'receipt-valid.png') });
  });

  it('a tampered receipt dropped as a file fails, naming the check', async () => {
    const tampered = structuredClone(receipt);
    tampered.records[0]!.proof!.hashes[0] = flip(tampered.records[0]!.proof!.hashes[0]!);
    const transfer = await page.evaluateHandle((text) => {
      // Browser globals (this runs in the page); Node's types know File but not DataTransfer.
      const page = globalThis as unknown as { DataTransfer: new () => { items: { add(file: File): void } } };
      const dt = new page.DataTransfer();
      dt.items.add(new File([text], 'receipt.json', { type: 'application/json' }));
      return dt;
    }, JSON.stringify(tampered));
    await page.dispatchEvent('#receipt-text', 'drop', { dataTransfer: transfer });
    await waitVerdict('failed');
    assert.equal(await verdict(), 'Invalid: the inclusion check failed.');
    assert.ok((await marks()).includes('inclusion:fail'));
    assert.ok((await marks()).includes('request_signature:pass'));
    // Only what verified is shown as verified: the checks after the failed one are not counted.
    const after = RECEIPT_CHECKS.slice(RECEIPT_CHECKS.indexOf('inclusion') + 1);
    assert.deepEqual(
      (await marks()).slice(-after.length),
      after.map((name) => `${name}:unverified`),
    );
    await page.locator('#receipt-result').screenshot({ path: join(ARTIFACTS, 'receipt-tampered.png') });
  });

  it('a pending receipt chosen as a file fails `sealed`, and passes with "Allow pending"; a wrong node key fails `sealer`', async () => {
    const file = join(profile, 'pending.json');
    writeFileSync(file, fixture('receipt-pending.json'));
    await page.setInputFiles('#receipt-file', file);
    await page.waitForSelector('#receipt-result .verdict-failed');
    assert.equal(await verdict(), 'Invalid: the sealed check failed.');
    await page.check('#receipt-allow-pending');
    await page.click('#receipt-form button[type="submit"]');
    await waitVerdict('verified');
    await page.uncheck('#receipt-allow-pending');

    await page.locator('#receipt-text').fill(valid);
    await page.fill('#receipt-sealer', receipt.request.body.requester_pk as string);
    await page.click('#receipt-form button[type="submit"]');
    await waitVerdict('failed');
    assert.equal(await verdict(), 'Invalid: the sealer check failed.');
    await page.fill('#receipt-sealer', receipt.records[0]!.record!.address.pk);
    await page.click('#receipt-form button[type="submit"]');
    await waitVerdict('verified');
    assert.deepEqual(consoleErrors, []);
  });
});
