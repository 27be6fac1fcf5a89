/**
 * Job receipts over HTTP (docs/protocol.md §15): a real four-step job (ndvi → inference → tile, plus a second
 * inference) on the embedded runner against fake upstreams; the receipt is pending until its epoch is sealed,
 * then verifies offline (core/receipt.ts), and any one changed byte of a signed or hashed field fails the
 * check that covers it.
 */
import assert from 'node:assert/strict';
import type { TileConfig } from '../../activities/tiles/index.js';
import { generateKeyPair } from '../../core/identity.js';
import { sealHeadsFor, verifyReceipt, type JobReceipt } from '../../core/receipt.js';
import type { InclusionProof, Seal } from '../../core/proof-types.js';
import { checkSealHead, sealInclusionIssue, type SealHead } from '../../core/seal-log.js';
import { TILE_STYLES } from '../../core/tile-styles.js';
import { ROME_CELL } from '../helpers/cog-fixture.js';
import { startFakeRuntime, type FakeRuntime } from '../helpers/fake-openai-runtime.js';
import { startGateway } from '../helpers/gateway.js';
import { TEST_NOW, startImageryCatalog, type ImageryCatalog } from '../helpers/imagery-fixtures.js';
import { certFor, certHeader, inferenceJob, signJob } from '../helpers/jobs.js';
import { sealThrough } from '../helpers/proofs.js';
import { RECEIPT_TAMPERS } from '../helpers/receipt-tampers.js';
import { startXyzServer, type XyzServer } from '../helpers/xyz-server.js';

const WORKER_MODEL = 'lfm2.5-1.2b-instruct';
const CELL = '861e8050fffffff';

const fourStepJob = () => ({
  h3_cell: CELL,
  steps: [
    {
      id: 'ndvi',
      type: 'image_process',
      operation: 'ndvi',
      context: { h3_cell: ROME_CELL, date_from: '2026-02-01', date_to: '2026-02-28' },
    },
    {
      id: 'explain',
      type: 'inference',
      depends_on: 'ndvi',
      messages: [{ role: 'user', content: 'where is it green?' }],
    },
    { id: 'map', type: 'tile_render', depends_on: 'explain', zoom: 12, style: 'osm-bright' },
    { id: 'summary', type: 'inference', messages: [{ role: 'user', content: 'one line on Rome parks' }] },
  ],
  budget_credits: 0.1,
});

describe('job receipts over HTTP (docs/protocol.md §15)', function () {
  this.timeout(20_000);
  const now = TEST_NOW + 60_000;
  const alice = generateKeyPair();
  let catalog: ImageryCatalog;
  let xyz: XyzServer;
  let worker: FakeRuntime;
  let gw: Awaited<ReturnType<typeof startGateway>>;

  before(async () => {
    catalog = await startImageryCatalog();
    catalog.stac.items = [catalog.item('S2A_rome', 10, catalog.romeAssets())];
    xyz = await startXyzServer();
    worker = await startFakeRuntime(WORKER_MODEL, () => ({
      content: 'Sure: {"text":"Villa Borghese.","locations":[{"name":"Villa Borghese","address":"Roma"}]}',
      usage: { prompt_tokens: 20, completion_tokens: 10 },
    }));
    gw = await startGateway({
      clock: () => now,
      imagery: { stacUrl: catalog.stac.url },
      tiles: {
        templates: Object.fromEntries(TILE_STYLES.map((s) => [s, xyz.template('png')])) as TileConfig['templates'],
        timeoutMs: 1000,
      },
      swarm: { workerRuntimeUrl: worker.url, workerModels: [WORKER_MODEL] },
    });
  });
  after(async () => {
    await gw.close();
    await worker.close();
    await catalog.stac.close();
    await xyz.close();
  });

  const receiptOf = async (jobId: string) => {
    const res = await gw.get(`/v1/compute/${jobId}/receipt`);
    assert.equal(res.status, 200, res.text);
    return res.body as JobReceipt;
  };

  it('keeps the delegation chain of a delegated request and checks it reaches the requester', async () => {
    const human = generateKeyPair();
    const agent = generateKeyPair();
    const cert = certFor(human, agent.publicKey, {}, now);
    const signed = signJob(agent, inferenceJob('a delegated question'));
    const res = await gw.post('/v1/compute', signed.body, {
      ...signed.headers,
      'x-svc-delegation-cert': certHeader([cert]),
    });
    assert.equal(res.status, 200, res.text);
    const jobId = (res.body as { job_id: string }).job_id;
    const receipt = await receiptOf(jobId);
    assert.deepEqual(receipt.request.delegation_chain, [cert]);
    assert.equal(verifyReceipt(receipt, { allowPending: true }).ok, true);
    const forged = structuredClone(receipt);
    (forged.request.delegation_chain![0] as { max_depth: number }).max_depth = 1;
    assert.equal(verifyReceipt(forged, { allowPending: true }).failedCheck, 'delegation_chain');
    const elsewhere = structuredClone(receipt);
    elsewhere.request.delegation_chain = [certFor(human, generateKeyPair().publicKey, {}, now)];
    assert.equal(verifyReceipt(elsewhere, { allowPending: true }).failedCheck, 'delegation_chain');
  });

  let sealed: JobReceipt;

  it('is pending until the epoch is sealed, then holds the request, every record, its proof and seal chain', async () => {
    const signed = signJob(alice, fourStepJob());
    const res = await gw.post('/v1/compute', signed.body, signed.headers);
    assert.equal(res.status, 200, res.text);
    const job = res.body as {
      job_id: string;
      epoch: number;
      proof: { record_id: string };
      steps: { id: string; record_id: string }[];
    };

    const pending = await receiptOf(job.job_id);
    assert.equal(pending.status, 'pending');
    assert.equal(pending.receipt_version, 2);
    assert.deepEqual(pending.seal_heads, []);
    assert.deepEqual(pending.request, { body: signed.body, delegation_chain: null });
    assert.ok(pending.pending.length > 0);
    const early = verifyReceipt(pending);
    assert.equal(early.ok, false);
    assert.equal(early.failedCheck, 'sealed');
    assert.equal(verifyReceipt(pending, { allowPending: true }).ok, true);

    await sealThrough(gw.proofs, gw.node, job.epoch);
    sealed = await receiptOf(job.job_id);
    assert.equal(sealed.status, 'complete');
    assert.deepEqual(sealed.pending, []);
    assert.deepEqual(
      sealed.records.map((r) => [r.role, r.step_id, r.record_id]),
      [['job', null, job.proof.record_id], ...job.steps.map((s) => ['step', s.id, s.record_id])],
    );
    assert.equal(sealed.records.length, 5);
    assert.ok(sealed.records.every((r) => r.seal !== null && r.proof !== null));
    assert.equal(sealed.receipt_version, 2);
    assert.equal(sealed.seal_heads!.length, 1);
    assert.equal(sealed.seal_heads![0]!.head.sealer_pk, gw.node.publicKey);
    assert.ok(sealed.records.every((r) => r.seal_proof !== null));
    const verdict = verifyReceipt(sealed, { sealerPk: gw.node.publicKey });
    assert.deepEqual(
      verdict.checks.filter((c) => !c.ok),
      [],
    );
    assert.equal(verdict.ok, true);
  });

  it('names the check a one-byte change breaks (every signed or hashed field)', () => {
    for (const tamper of RECEIPT_TAMPERS.filter((t) => t.appliesTo?.(sealed) !== false)) {
      const copy = structuredClone(sealed);
      tamper.apply(copy);
      const verdict = verifyReceipt(copy, { allowPending: tamper.options?.allow_pending === true });
      assert.equal(verdict.ok, false, `${tamper.name}: still verifies`);
      assert.equal(
        verdict.failedCheck,
        tamper.expected,
        `${tamper.name}: ${JSON.stringify(verdict.checks.find((c) => !c.ok))}`,
      );
    }
  });

  it('proves the same seals in a later head after more epochs are sealed, in a receipt of the same size', async () => {
    const epoch = sealed.records[0]!.seal!.epoch;
    const before = JSON.stringify(sealed).length;
    // Four more epochs: the head grows from the job's epoch to 5 seals, the proofs to 2 or 3 hashes.
    await sealThrough(gw.proofs, gw.node, epoch + 4);
    const later = await receiptOf(sealed.job_id);
    const head = later.seal_heads![0]!.head;
    assert.equal(head.tree_size - sealed.seal_heads![0]!.head.tree_size, 4);
    assert.deepEqual(
      later.records.map((r) => r.seal!.seal_hash),
      sealed.records.map((r) => r.seal!.seal_hash),
    );
    assert.ok(later.records.every((r) => r.seal_proof!.tree_size === head.tree_size));
    // It grows by the proof hashes (67 bytes of JSON each), not by the four seals (about 600 bytes each).
    const hashes = later.records.reduce((n, r) => n + r.seal_proof!.hashes.length, 0);
    assert.ok(hashes <= later.records.length * 3);
    assert.ok(JSON.stringify(later).length - before <= hashes * 67, 'the receipt grows by its proof hashes only');
    assert.equal(verifyReceipt(later, { sealerPk: gw.node.publicKey }).ok, true);
    sealed = later;
  });

  it('carries the head its sealer stored at sealing, and equals the receipt computed from every seal', async () => {
    const epoch = sealed.records[0]!.seal!.epoch;
    const sealer = gw.node.publicKey;
    // One more epoch sealed: sealing itself stores the head over the new log, before any receipt is asked for.
    const made = await sealThrough(gw.proofs, gw.node, epoch + 5);
    assert.equal(made.length, 1);
    const stored = await gw.proofs.sealHead(sealer, sealer);
    assert.ok(stored !== null);
    assert.equal(stored.tree_size, sealed.seal_heads![0]!.head.tree_size + 1);
    assert.equal(checkSealHead(stored).ok, true);
    const state = await gw.proofs.sealLogState(sealer);
    assert.equal(state!.size, stored.tree_size);
    // A retried run seals nothing and stores nothing new.
    assert.deepEqual(await sealThrough(gw.proofs, gw.node, epoch + 5), []);
    assert.deepEqual(await gw.proofs.sealLogState(sealer), state);
    assert.deepEqual(await gw.proofs.sealHead(sealer, sealer), stored);

    const later = await receiptOf(sealed.job_id);
    assert.deepEqual(later.seal_heads![0]!.head, stored);
    assert.equal(verifyReceipt(later, { sealerPk: sealer }).ok, true);
    // The same receipt from every seal of the log (the computation without stored nodes), byte for byte.
    const records = structuredClone(later.records);
    const seal_heads = sealHeadsFor(records, new Map([[sealer, await gw.proofs.sealsOf(sealer)]]), gw.node.secretKey);
    assert.equal(JSON.stringify({ ...later, records, seal_heads }), JSON.stringify(later));
    sealed = later;
  });

  it("serves /store/proof with the seal's inclusion proof in a signed head of its sealer's log", async () => {
    const entry = sealed.records[1]!;
    const res = await gw.get(`/store/proof/${encodeURIComponent(entry.record_id)}`);
    assert.equal(res.status, 200, res.text);
    const bundle = res.body as { seal: Seal; seal_head: SealHead; seal_proof: InclusionProof };
    const head = checkSealHead(bundle.seal_head);
    assert.ok(head.ok);
    assert.equal(head.value.signer_pk, gw.node.publicKey);
    assert.equal(head.value.tree_size, sealed.seal_heads![0]!.head.tree_size);
    assert.equal(sealInclusionIssue(bundle.seal, head.value, bundle.seal_proof), undefined);
    assert.deepEqual(bundle.seal_proof, entry.seal_proof);
  });

  it('fails the sealer check when another key is pinned', () => {
    const verdict = verifyReceipt(sealed, { sealerPk: generateKeyPair().publicKey });
    assert.equal(verdict.failedCheck, 'sealer');
  });

  it('carries the anchor of a sealed epoch once the ledger has one, and checks its root', async () => {
    const seal = sealed.records[0]!.seal!;
    await gw.ledger.recordAnchor({
      version: 1,
      sealer_pk: seal.sealer_pk,
      epoch: seal.epoch,
      root: seal.merkle_root,
      status: 'submitted',
      tx_hash: 'ab'.repeat(32),
      envelope_xdr: null,
      ledger: 42,
      attempts: 1,
      error: null,
      at: new Date(now).toISOString(),
    });
    const anchored = await receiptOf(sealed.job_id);
    assert.equal(anchored.records[0]!.anchor?.root, seal.merkle_root);
    assert.equal(verifyReceipt(anchored).ok, true);
    // The head ending at the anchored seal, and the proof that the receipt's head extends it (docs/protocol.md §15.4).
    const log = anchored.seal_heads![0]!;
    assert.equal(log.anchored!.head.tree_size, seal.epoch - log.head.first_epoch + 1);
    // Read from the stored log, the anchored head and its consistency proof are those every seal gives.
    const records = structuredClone(anchored.records);
    const sealer = seal.sealer_pk;
    const fromSeals = sealHeadsFor(records, new Map([[sealer, await gw.proofs.sealsOf(sealer)]]), gw.node.secretKey);
    assert.equal(JSON.stringify({ ...anchored, records, seal_heads: fromSeals }), JSON.stringify(anchored));
    const unanchored = structuredClone(anchored);
    unanchored.seal_heads![0]!.anchored = null;
    assert.equal(verifyReceipt(unanchored).failedCheck, 'anchor');
    anchored.records[0]!.anchor!.root = seal.merkle_root.replace(/^./, (c) => (c === '0' ? '1' : '0'));
    assert.equal(verifyReceipt(anchored).failedCheck, 'anchor');
  });

  it('answers 404 receipt_unavailable for a job stored without its signed request (before receipts)', async () => {
    const jobId = '11111111-1111-8111-8111-111111111111';
    const at = new Date(now).toISOString();
    await gw.jobs.claim({
      version: 1,
      job_id: jobId,
      status: 'running',
      requester_pk: alice.publicKey,
      h3_cell: CELL,
      epoch: 0,
      step_types: ['inference'],
      request_hash: '0'.repeat(64),
      created_at: at,
      updated_at: at,
      response: null,
    });
    const res = await gw.get(`/v1/compute/${jobId}/receipt`);
    assert.equal(res.status, 404, res.text);
    assert.equal((res.body as { error: string }).error, 'receipt_unavailable');
  });

  it('answers 404 job_not_found for an unknown job', async () => {
    const res = await gw.get('/v1/compute/00000000-0000-8000-8000-000000000000/receipt');
    assert.equal(res.status, 404);
    assert.equal((res.body as { error: string }).error, 'job_not_found');
  });
});
