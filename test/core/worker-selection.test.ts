import assert from 'node:assert/strict';
import { cellToChildren, latLngToCell } from 'h3-js';
import {
  cellDistance,
  describeNoWorker,
  eligibleWorkers,
  isOnline,
  ONLINE_WINDOW_MS,
  type SelectableWorker,
} from '../../core/worker-selection.js';

const NOW = Date.UTC(2026, 2, 1, 12);
const ROME = '861e8050fffffff';
const ROME_NEIGHBOUR = '861e8051fffffff';
const MILAN = latLngToCell(45.4642, 9.19, 6);
const BERLIN = latLngToCell(52.52, 13.405, 6);
const NEW_YORK = latLngToCell(40.7128, -74.006, 6);
const SAN_FRANCISCO = latLngToCell(37.7749, -122.4194, 6);

let n = 0;
const worker = (overrides: Partial<SelectableWorker> = {}): SelectableWorker => ({
  pk: `w${String(n++).padStart(3, '0')}`,
  h3_cell: ROME,
  models: ['tinyllama'],
  tools: ['web-search'],
  hardware_tier: 1,
  relay: false,
  trust_tier: 'seedling',
  last_seen_ms: NOW,
  ...overrides,
});
const pks = (workers: readonly SelectableWorker[]) => workers.map((w) => w.pk);

describe('worker selection', () => {
  it('counts a worker online for 30 s after it was last seen (three missed 10 s beats)', () => {
    assert.equal(ONLINE_WINDOW_MS, 30_000);
    assert.equal(isOnline(worker({ last_seen_ms: NOW - 30_000 }), NOW), true);
    assert.equal(isOnline(worker({ last_seen_ms: NOW - 30_001 }), NOW), false);
    assert.equal(isOnline(worker({ last_seen_ms: NOW + 5_000 }), NOW), true);
  });

  it('counts a worker that left offline at once, however recently it was seen', () => {
    assert.equal(isOnline(worker({ last_seen_ms: NOW, left_at_ms: NOW }), NOW), false);
    assert.equal(isOnline(worker({ last_seen_ms: NOW, left_at_ms: null }), NOW), true);
    assert.deepEqual(eligibleWorkers([worker({ left_at_ms: NOW - 1 })], { model: 'tinyllama' }, NOW), []);
  });

  it('keeps only online compute workers that serve the model', () => {
    const ok = worker();
    const stale = worker({ last_seen_ms: NOW - 120_000 });
    const relay = worker({ relay: true });
    const otherModel = worker({ models: ['phi-3-mini'] });
    assert.deepEqual(pks(eligibleWorkers([ok, stale, relay, otherModel], { model: 'tinyllama' }, NOW)), [ok.pk]);
  });

  it('requires every required tool to be advertised', () => {
    const both = worker({ tools: ['web-search', 'python-repl'] });
    const one = worker({ tools: ['web-search'] });
    const none = worker({ tools: [] });
    const need = { tools: ['web-search', 'python-repl'] };
    assert.deepEqual(pks(eligibleWorkers([both, one, none], need, NOW)), [both.pk]);
    assert.equal(eligibleWorkers([none], { tools: [] }, NOW).length, 1);
  });

  it("requires the trust tier of each required tool's min_trust_tier, and of minTier", () => {
    const seedling = worker({ tools: ['web-search', 'code-execution'] });
    const navigator = worker({ tools: ['web-search', 'code-execution'], trust_tier: 'navigator' });
    const toolMinTiers = { 'web-search': 'seedling', 'code-execution': 'navigator' } as const;
    assert.deepEqual(pks(eligibleWorkers([seedling, navigator], { tools: ['code-execution'], toolMinTiers }, NOW)), [
      navigator.pk,
    ]);
    // A gate on a tool the job does not need does not apply.
    assert.equal(eligibleWorkers([seedling, navigator], { tools: ['web-search'], toolMinTiers }, NOW).length, 2);
    assert.deepEqual(pks(eligibleWorkers([seedling, navigator], { minTier: 'explorer' }, NOW)), [navigator.pk]);
    assert.deepEqual(pks(eligibleWorkers([seedling, navigator], { minTier: 'sovereign' }, NOW)), []);
  });

  it('requires the hardware tier', () => {
    const laptop = worker();
    const gpu = worker({ hardware_tier: 2 });
    const pro = worker({ hardware_tier: 3 });
    assert.deepEqual(pks(eligibleWorkers([laptop, gpu, pro], { minHardwareTier: 2 }, NOW)).sort(), [gpu.pk, pro.pk]);
  });

  it('matches a jurisdiction by country, region or US state, as gate 2 names it', () => {
    const rome = worker({ h3_cell: ROME });
    const berlin = worker({ h3_cell: BERLIN });
    const newYork = worker({ h3_cell: NEW_YORK });
    const sanFrancisco = worker({ h3_cell: SAN_FRANCISCO });
    const all = [rome, berlin, newYork, sanFrancisco];
    assert.deepEqual(pks(eligibleWorkers(all, { jurisdiction: 'IT' }, NOW)), [rome.pk]);
    assert.deepEqual(pks(eligibleWorkers(all, { jurisdiction: 'EU' }, NOW)).sort(), [rome.pk, berlin.pk].sort());
    assert.deepEqual(
      pks(eligibleWorkers(all, { jurisdiction: 'us' }, NOW)).sort(),
      [newYork.pk, sanFrancisco.pk].sort(),
    );
    assert.deepEqual(pks(eligibleWorkers(all, { jurisdiction: 'US-CA' }, NOW)), [sanFrancisco.pk]);
    assert.deepEqual(pks(eligibleWorkers(all, { jurisdiction: 'FR' }, NOW)), []);
    assert.equal(eligibleWorkers(all, { jurisdiction: null }, NOW).length, 4);
  });

  it('orders the job cell first (by containment), then nearer cells, then far ones', () => {
    const inside = worker({ h3_cell: cellToChildren(ROME, 9)[0]! });
    const neighbour = worker({ h3_cell: ROME_NEIGHBOUR, trust_tier: 'sovereign' });
    const milan = worker({ h3_cell: MILAN, trust_tier: 'sovereign' });
    const newYork = worker({ h3_cell: NEW_YORK, trust_tier: 'sovereign' });
    const parent = worker({ h3_cell: '851e8053fffffff' });
    const ordered = eligibleWorkers([newYork, milan, neighbour, inside, parent], { cell: ROME }, NOW);
    assert.deepEqual(pks(ordered.slice(0, 2)).sort(), [inside.pk, parent.pk].sort());
    assert.deepEqual(pks(ordered.slice(2)), [neighbour.pk, milan.pk, newYork.pk]);
  });

  it('breaks ties by higher trust tier, then most recently seen, then pk', () => {
    const a = worker({ trust_tier: 'explorer', last_seen_ms: NOW - 1000 });
    const b = worker({ trust_tier: 'navigator', last_seen_ms: NOW - 20_000 });
    const c = worker({ trust_tier: 'explorer', last_seen_ms: NOW });
    const d = worker({ trust_tier: 'explorer', last_seen_ms: NOW });
    assert.deepEqual(pks(eligibleWorkers([a, d, c, b], { cell: ROME }, NOW)), [b.pk, c.pk, d.pk, a.pk]);
    assert.deepEqual(pks(eligibleWorkers([a, d, c, b], {}, NOW)), [b.pk, c.pk, d.pk, a.pk]);
  });

  it('measures cell distance across resolutions, and far cells as Infinity', () => {
    assert.equal(cellDistance(ROME, cellToChildren(ROME, 8)[3]!), 0);
    assert.equal(cellDistance(ROME, ROME_NEIGHBOUR), 1);
    assert.ok(cellDistance(ROME, MILAN) > 1 && Number.isFinite(cellDistance(ROME, MILAN)));
    assert.equal(cellDistance(ROME, NEW_YORK), Infinity);
  });

  it('says what was asked for when no worker is eligible, and to drop a jurisdiction constraint', () => {
    const plain = describeNoWorker({ model: 'tinyllama', tools: ['web-search', 'python-repl'], minTier: 'explorer' });
    assert.equal(
      plain,
      'no eligible worker is online (model tinyllama, tools [web-search, python-repl], trust tier explorer or above); retry later',
    );
    const constrained = describeNoWorker({ model: 'tinyllama', jurisdiction: 'IT' });
    assert.match(constrained, /in jurisdiction IT/);
    assert.match(constrained, /retry later or remove the jurisdiction constraint/);
  });
});
