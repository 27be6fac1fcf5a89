/**
 * Forged telemetry and Sybil devices over HTTP (docs/protocol.md §2.10, docs/security.md): what an attacker who
 * registers as a worker, or who owns many device keys, can make fusion and its receipt say.
 */
import assert from 'node:assert/strict';
import { cellToChildren } from 'h3-js';
import { DEFAULT_EPOCH_GENESIS_MS } from '../../core/epoch.js';
import { signRequestBody } from '../../core/gates/signature.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import type { ProofRecord } from '../../core/proof-types.js';
import { verifyReceipt, type JobReceipt } from '../../core/receipt.js';
import { signReading, telemetryRecordId, type ReadingFields } from '../../core/telemetry.js';
import type { NewRecord } from '../../store/proof-store.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { CONFORMANCE_NODE, conformanceDevice, fusionInputsOf, fusionReceipt } from '../helpers/fusion-receipt.js';
import { createEmbeddedJobRunner } from '../../api/job-runner.js';
import { startGateway } from '../helpers/gateway.js';
import { certFor, certHeader, signJob } from '../helpers/jobs.js';
import { push, sealThrough } from '../helpers/proofs.js';
import { signedReading } from '../helpers/telemetry.js';

type Gateway = Awaited<ReturnType<typeof startGateway>>;
type Obj = Record<string, unknown>;

const HOUR = 3_600_000;
const EPOCH = 7000;
const EPOCH_START = DEFAULT_EPOCH_GENESIS_MS + EPOCH * HOUR;
const JOB_CELL = '861e8050fffffff';
/** Resolution-9 device cells inside the job cell. */
const CELLS = cellToChildren(JOB_CELL, 9).sort();
const iso = (ms: number) => new Date(ms).toISOString();
/** Every honest reading's instant: minute 5 of epoch 7000. */
const AT = iso(EPOCH_START + 5 * 60_000);

interface Rejected {
  error: string;
  rejected: { id: string; error: string }[];
}
interface FusionOutput {
  value: number;
  voter_count: number;
  device_count: number;
  input_voter_count: number;
  input_device_count: number;
  input_reading_count: number;
  record_ids: string[];
  rejected: { principal_pk: string; device_count: number }[];
}

describe('forged telemetry and Sybil devices (POST /store/sync, POST /v1/telemetry, sensor_fusion, receipts)', () => {
  let now = EPOCH_START + 30 * 60_000;
  const gateways: Gateway[] = [];
  beforeEach(() => {
    now = EPOCH_START + 30 * 60_000;
  });
  afterEach(async () => {
    for (const gw of gateways.splice(0)) await gw.close();
  });

  async function gateway(options: Parameters<typeof startGateway>[0] = {}) {
    const gw = await startGateway({ clock: () => now, ...options });
    gateways.push(gw);
    return gw;
  }

  /** One no2 reading of `device` at AT, sent as a signed batch (with a delegation certificate when given). */
  async function report(gw: Gateway, device: KeyPair, cell: string, value: number, cert?: string) {
    const reading = signedReading(device, cell, { quantity: 'no2', value, unit: 'ug/m3', observed_at: AT });
    const signed = signRequestBody(device.secretKey, { h3_cell: cell, readings: [reading], created_at: iso(now) });
    const headers: Record<string, string> = { 'x-idn-signature': signed.signature };
    if (cert !== undefined) headers['x-svc-delegation-cert'] = cert;
    const res = await gw.post('/v1/telemetry', signed.body, headers);
    assert.equal(res.status, 200, res.text);
  }

  /** A telemetry record entry as the attacker writes it: version 2, `value` at AT, signed by `signer`. */
  function forgedEntry(device: KeyPair | string, signer: KeyPair, cell: string, value: number, extra: Obj = {}) {
    const devicePk = typeof device === 'string' ? device : device.publicKey;
    const fields: ReadingFields = {
      device_pk: devicePk,
      h3_cell: cell,
      quantity: 'no2',
      value,
      unit: 'ug/m3',
      observed_at: AT,
    };
    return {
      id: telemetryRecordId(devicePk, 'no2', AT),
      h3_cell: cell,
      epoch: EPOCH,
      collection_type: 'telemetry',
      payload_type: 'iot/telemetry',
      payload: { ...fields, device_signature: signReading(signer.secretKey, fields), principal_pk: signer.publicKey },
      written_at: iso(now),
      ...extra,
    } satisfies NewRecord;
  }

  /** Registers `key` as a worker over HTTP, as anyone may. */
  async function registerOverHttp(gw: Gateway, key: KeyPair) {
    const signed = signRequestBody(key.secretKey, {
      h3_cell: JOB_CELL,
      models: [],
      tools: [],
      hardware: { platform: 'linux-x64', gpu: null, vram_gb: 0, ram_gb: 8, cores: 4 },
      hardware_tier: 1,
      relay: false,
      version: '0.1.0',
      created_at: iso(now),
    });
    const res = await gw.post('/svc/workers/register', signed.body, { 'x-idn-signature': signed.signature });
    assert.equal(res.status, 201, res.text);
  }

  const fusionJob = (requester: KeyPair, headers: Record<string, string> = {}) => {
    const signed = signJob(requester, {
      h3_cell: JOB_CELL,
      steps: [{ id: 'fuse', type: 'sensor_fusion', quantity: 'no2' }],
      budget_credits: 0.1,
    });
    return { body: signed.body, headers: { ...signed.headers, ...headers } };
  };

  it('refuses telemetry records a registered worker pushes through /store/sync, under any collection or type', async () => {
    const gw = await gateway();
    const honest = conformanceDevice('a');
    await report(gw, honest, CELLS[0]!, 21);
    const mallory = generateKeyPair();
    await registerOverHttp(gw, mallory);
    // Written in mallory's own store (so each is a valid record of its writer), then pushed.
    const own = createSqliteProofStore(openSqlite(':memory:'));
    const invented = generateKeyPair();
    const records = await own.appendRecords(mallory, [
      // The honest device's instant with 999, and an invented device signing its own reading properly.
      forgedEntry(honest.publicKey, mallory, CELLS[0]!, 999),
      forgedEntry(invented, invented, CELLS[1]!, 999),
      // The same reading disguised: another collection and payload type under a telemetry id, another id.
      forgedEntry(generateKeyPair(), mallory, CELLS[3]!, 999, {
        collection_type: 'inference',
        payload_type: 'hive/inference',
      }),
      forgedEntry(generateKeyPair(), mallory, CELLS[4]!, 999, { id: 'reading-1' }),
    ]);
    const res = await push(gw, mallory, '/store/sync', records);
    assert.equal(res.status, 403, res.text);
    const body = res.body as Rejected;
    assert.equal(body.error, 'writer_not_allowed');
    assert.deepEqual(
      body.rejected.map((r) => r.error),
      ['writer_not_allowed', 'writer_not_allowed', 'writer_not_allowed', 'writer_not_allowed'],
    );
    // Nothing of mallory's was stored: the honest reading's id is still the node's record.
    const writers = await Promise.all(records.map(async (r) => (await gw.proofs.getRecord(r.id))?.address.pk ?? null));
    assert.deepEqual(writers, [gw.node.publicKey, null, null, null]);
  });

  it('fuses only readings its own node wrote and their devices signed; a receipt whose input another key wrote or signed fails fusion_inputs', async () => {
    const gw = await gateway({ node: CONFORMANCE_NODE });
    // Five honest NO2 devices, 20–24, each its own principal.
    const honest = ['a', 'b', 'c', 'd', 'e'].map(conformanceDevice);
    for (const [i, device] of honest.entries()) await report(gw, device, CELLS[i]!, 20 + i);

    // A fresh key registers as a worker and syncs forged readings: the honest devices at 999, and 20 invented
    // devices that sign their own 999s. Every one is refused.
    const mallory = generateKeyPair();
    await registerOverHttp(gw, mallory);
    const invented = Array.from({ length: 20 }, () => generateKeyPair());
    const forged: NewRecord[] = [
      ...honest.map((device, i) => forgedEntry(device.publicKey, mallory, CELLS[i]!, 999)),
      ...invented.map((device, i) => forgedEntry(device, device, CELLS[5 + i]!, 999)),
    ];
    const own = createSqliteProofStore(openSqlite(':memory:'));
    const pushed = await own.appendRecords(mallory, forged);
    const synced = await push(gw, mallory, '/store/sync', pushed);
    assert.equal(synced.status, 403, synced.text);
    assert.equal((synced.body as Rejected).rejected.length, 25);
    assert.ok((synced.body as Rejected).rejected.every((r) => r.error === 'writer_not_allowed'));

    // The same forgeries written straight into the gateway's proof store under mallory's key (as a store a
    // worker could reach, or an older release let in): fusion must ignore them.
    const planted: ProofRecord[] = await gw.proofs.appendRecords(mallory, forged);
    assert.equal(planted.length, 25);
    const listed = (await gw.get(`/v1/telemetry?cell=${JOB_CELL}&quantity=no2&limit=1000`)).body as {
      features: { properties: { writer_pk: string } }[];
    };
    assert.equal(listed.features.length, 30, 'the listing shows every record, with its writer');

    // Both writers seal epoch 7000; the job runs in epoch 7001 and fuses 7000.
    await sealThrough(gw.proofs, mallory, EPOCH);
    now = EPOCH_START + HOUR + 60_000;
    const job = fusionJob(generateKeyPair());
    const res = await gw.post('/v1/compute', job.body, job.headers);
    assert.equal(res.status, 200, res.text);
    const answer = res.body as { job_id: string; steps: { status: string; output: FusionOutput }[] };
    const out = answer.steps[0]!.output;
    assert.equal(out.value, 22);
    assert.equal(out.voter_count, 5);
    assert.equal(out.input_device_count, 5, 'no invented device and no forged reading is an input');
    assert.equal(out.input_reading_count, 5);
    for (const id of out.record_ids) assert.equal((await gw.proofs.getRecord(id))?.address.pk, gw.node.publicKey);

    await gw.writer.flush();
    await sealThrough(gw.proofs, gw.node, EPOCH + 1);
    const receipt = (await gw.get(`/v1/compute/${answer.job_id}/receipt`)).body as JobReceipt;
    const verdict = verifyReceipt(receipt, { sealerPk: gw.node.publicKey });
    assert.ok(verdict.ok, JSON.stringify(verdict.checks.filter((c) => !c.ok)));

    // The receipt made again from its own inputs verifies (the control for the two tampers below).
    const inputs = fusionInputsOf(receipt);
    assert.equal(verifyReceipt(fusionReceipt(receipt, inputs)).ok, true);
    // One input written again, as a valid record, by another key than the job's node.
    const rewritten = fusionReceipt(receipt, inputs, { writerOf: (_, i) => (i === 0 ? mallory : CONFORMANCE_NODE) });
    const wrongWriter = verifyReceipt(rewritten);
    assert.equal(wrongWriter.failedCheck, 'fusion_inputs');
    assert.match(wrongWriter.checks.find((c) => c.name === 'fusion_inputs')!.detail, /not the node/);
    // One input's device signature replaced by another key's signature over the same reading.
    const resigned = inputs.map((input, i) =>
      i === 0 ? { ...input, device_signature: signReading(mallory.secretKey, input) } : input,
    );
    const wrongDevice = verifyReceipt(fusionReceipt(receipt, resigned));
    assert.equal(wrongDevice.failedCheck, 'fusion_inputs');
    assert.match(wrongDevice.checks.find((c) => c.name === 'fusion_inputs')!.detail, /device signature/);
  });

  it('gives one vote per principal under REQUIRE_DELEGATION and TRUSTED_PRINCIPALS: six keys of one owner do not outvote five', async () => {
    const principals = Array.from({ length: 6 }, () => generateKeyPair());
    const gw = await gateway({
      config: { requireDelegation: true, trustedPrincipals: new Set(principals.map((p) => p.publicKey)) },
    });
    const delegated = (principal: KeyPair, agent: KeyPair) =>
      certHeader(certFor(principal, agent.publicKey, { facets: ['sensor_fusion'] }, now));
    // Five honest devices, 20–24, each delegated by its own principal.
    for (let i = 0; i < 5; i++) {
      const device = generateKeyPair();
      await report(gw, device, CELLS[i]!, 20 + i, delegated(principals[i]!, device));
    }
    // Six device keys of one principal, each posting 1999.
    const owner = principals[5]!;
    for (let i = 0; i < 6; i++) {
      const device = generateKeyPair();
      await report(gw, device, CELLS[5 + i]!, 1999, delegated(owner, device));
    }
    now = EPOCH_START + HOUR + 60_000;
    const agent = generateKeyPair();
    const job = fusionJob(agent, { 'x-svc-delegation-cert': delegated(principals[0]!, agent) });
    const res = await gw.post('/v1/compute', job.body, job.headers);
    assert.equal(res.status, 200, res.text);
    const out = (res.body as { steps: { output: FusionOutput }[] }).steps[0]!.output;
    assert.ok(out.value >= 20 && out.value <= 24, `fused ${out.value}`);
    assert.equal(out.value, 22.5, 'the median of six voters: 20, 21, 22, 23, 24 and the owner’s 1999');
    assert.equal(out.input_voter_count, 6);
    assert.equal(out.input_device_count, 11);
    assert.equal(out.voter_count, 5);
    assert.deepEqual(
      out.rejected.map((r) => [r.principal_pk, r.device_count]),
      [[owner.publicKey, 6]],
    );
  });

  it('fails a step whose output cannot be hashed (a non-finite fused value) cleanly: invalid_step_output, the job failed', async () => {
    // A fusion step that answers Infinity, as three readings of 1.7e308 once made the fused mean.
    const gw = await gateway({
      jobRunner: (compute, jobs) =>
        createEmbeddedJobRunner({
          steps: {
            ...compute.steps,
            sensorFusionStep: async () => ({
              output: { quantity: 'no2', value: Infinity, mean: Infinity },
              cost: 0.0005,
              worker_pk: null,
              record_id: null,
              latency_ms: 1,
            }),
          },
          jobs: compute.jobs,
          store: jobs,
          waitMs: 10_000,
        }),
    });
    now = EPOCH_START + HOUR + 60_000;
    const job = fusionJob(generateKeyPair());
    const res = await gw.post('/v1/compute', job.body, job.headers);
    assert.equal(res.status, 502, res.text);
    const body = res.body as { error: string; step_id: string; job_id: string; job: { status: string } };
    assert.equal(body.error, 'invalid_step_output');
    assert.equal(body.step_id, 'fuse');
    assert.equal(body.job.status, 'failed');
    const stored = await gw.get(`/v1/compute/${body.job_id}`);
    assert.equal(stored.status, 200, stored.text);
    assert.equal((stored.body as { status: string }).status, 'failed', 'the job ends, it does not stay running');
  });
});
