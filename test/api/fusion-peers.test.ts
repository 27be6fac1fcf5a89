/**
 * Sensor fusion across the gateways of one deployment (docs/protocol.md §2.10 rule 3): two gateways, each with its
 * own node key and listing the other in SYNC_NODE_KEYS, share one proof store, as the chaos run's two gateways
 * share one MongoDB-protocol store. Readings posted to one are written by its key; a fusion job on the other takes
 * them, names both keys as `trusted_writers`, and its receipt verifies with the job record written by the other
 * key. A fusion output naming a key the job-record writer does not trust is refused before the record binds it.
 */
import assert from 'node:assert/strict';
import { cellToChildren } from 'h3-js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import { DEFAULT_EPOCH_GENESIS_MS } from '../../core/epoch.js';
import { signRequestBody } from '../../core/gates/signature.js';
import { jobRecordOf } from '../../activities/compute/job-activities.js';
import type { ScheduleResult } from '../../core/job-scheduler.js';
import type { ComputeJobInput } from '../../core/job-steps.js';
import { verifyReceipt, type JobReceipt } from '../../core/receipt.js';
import { startPeerGateways, type Gateway } from '../helpers/peer-gateways.js';
import { signJob } from '../helpers/jobs.js';
import { sealThrough } from '../helpers/proofs.js';
import { signedReadings } from '../helpers/telemetry.js';

const HOUR = 3_600_000;
const EPOCH = 7000;
const EPOCH_START = DEFAULT_EPOCH_GENESIS_MS + EPOCH * HOUR;
const JOB_CELL = '861e8050fffffff';
const DEVICE_CELLS = cellToChildren(JOB_CELL, 9).sort().slice(0, 8);
const iso = (ms: number) => new Date(ms).toISOString();

describe('sensor fusion across two gateways sharing one proof store (SYNC_NODE_KEYS)', () => {
  let now = EPOCH_START + 30 * 60_000;
  const gateways: Gateway[] = [];
  afterEach(async () => {
    for (const gw of gateways.splice(0)) await gw.close();
  });
  beforeEach(() => {
    now = EPOCH_START + 30 * 60_000;
  });

  /** Gateways A and B of one deployment (test/helpers/peer-gateways.ts), closed after each test. */
  async function pair(): Promise<[Gateway, Gateway]> {
    const both = await startPeerGateways(() => now);
    gateways.push(...both);
    return both;
  }

  async function post(gw: Gateway, device: KeyPair, cell: string, values: number[]) {
    const readings = values.map((value, k) => ({
      quantity: 'pm2_5',
      value,
      unit: 'ug/m3',
      observed_at: iso(EPOCH_START + (5 + k) * 60_000),
    }));
    const signed = signRequestBody(device.secretKey, {
      h3_cell: cell,
      readings: signedReadings(device, cell, readings),
      created_at: iso(now),
    });
    const res = await gw.post('/v1/telemetry', signed.body, { 'x-idn-signature': signed.signature });
    assert.equal(res.status, 200, res.text);
  }

  it('fuses the readings posted to the other gateway, and the receipt verifies with the job record the other key wrote', async () => {
    const [a, b] = await pair();
    // Four devices post to A, two to B: the numbers of test/api/telemetry.test.ts, split across the gateways.
    const sends: [Gateway, number[]][] = [
      [a, [10]],
      [a, [12]],
      [a, [11, 13, 14, 30, 9]],
      [a, [14]],
      [b, [15]],
      [b, [80]],
    ];
    for (const [i, [gw, values]] of sends.entries()) await post(gw, generateKeyPair(), DEVICE_CELLS[i]!, values);
    now = EPOCH_START + HOUR + 60_000;

    const signed = signJob(generateKeyPair(), {
      h3_cell: JOB_CELL,
      steps: [{ id: 'fuse', type: 'sensor_fusion', quantity: 'pm2_5' }],
      budget_credits: 0.1,
    });
    const res = await b.post('/v1/compute', signed.body, signed.headers);
    assert.equal(res.status, 200, res.text);
    const job = res.body as { job_id: string; steps: { status: string; output: Record<string, unknown> }[] };
    const out = job.steps[0]!.output;
    assert.equal(job.steps[0]!.status, 'complete');
    assert.equal(out.input_device_count, 6, "A's four devices are fused on B");
    assert.equal(out.value, 13.5);
    assert.deepEqual(out.trusted_writers, [a.node.publicKey, b.node.publicKey].sort());

    await b.writer.flush();
    await sealThrough(b.proofs, a.node, EPOCH + 1);
    await sealThrough(b.proofs, b.node, EPOCH + 1);
    const receipt = (await b.get(`/v1/compute/${job.job_id}/receipt`)).body as JobReceipt;
    const jobRecord = receipt.records.find((r) => r.role === 'job')!.record!;
    assert.equal(jobRecord.address.pk, b.node.publicKey);
    const byA = receipt.records.filter((r) => r.role === 'input' && r.record?.address.pk === a.node.publicKey);
    assert.equal(byA.length, 8, "the inputs A wrote are in B's receipt");
    const verdict = verifyReceipt(receipt, { sealerPk: b.node.publicKey });
    assert.ok(verdict.ok, JSON.stringify(verdict.checks.filter((c) => !c.ok)));
    assert.match(verdict.checks.find((c) => c.name === 'fusion_inputs')!.detail, /1 fusion step\(s\) recomputed/);
  });

  it('refuses a fusion output whose trusted_writers names a key the job-record writer does not trust', async () => {
    const [a, b] = await pair();
    const rogue = generateKeyPair();
    const job: ComputeJobInput = {
      job_id: 'fusion-peers-rogue',
      requester_pk: generateKeyPair().publicKey,
      h3_cell: JOB_CELL,
      epoch: EPOCH + 1,
      budget_credits: 0.1,
      proof_credits: 0,
      steps: [{ id: 'fuse', type: 'sensor_fusion', quantity: 'pm2_5', estimate: 0.0005 }],
      plan: { order: ['fuse'], levels: [['fuse']] },
      jurisdiction: null,
      min_tier: null,
      request_hash: 'ab'.repeat(32),
      created_at: iso(now),
    };
    // What a swarm worker could answer: its own key among the writers it claims to have trusted.
    const ran = (writers: string[]): ScheduleResult => ({
      status: 'complete',
      charged: 0.0005,
      error: null,
      steps: [
        {
          id: 'fuse',
          type: 'sensor_fusion',
          status: 'complete',
          output: { value: 1, record_ids: [], trusted_writers: writers },
          latency_ms: 5,
          worker_pk: rogue.publicKey,
          cost: 0.0005,
          record_id: null,
        },
      ],
    });
    await b.jobs.claim(jobRecordOf(job, 'running', null, now));
    const refused = await b.compute.jobs.finishJob(job, ran([b.node.publicKey, rogue.publicKey].sort()));
    assert.equal(refused.status, 'failed');
    assert.equal(refused.steps[0]!.status, 'failed');
    assert.equal(refused.steps[0]!.error?.code, 'invalid_step_output');
    assert.equal(refused.steps[0]!.cost, 0);
    assert.equal(refused.settlement.total_credits, 0);
    assert.equal(refused.error?.code, 'invalid_step_output');

    // The peer's key is trusted: the same answer naming A and B completes.
    const other = { ...job, job_id: 'fusion-peers-trusted' };
    await b.jobs.claim(jobRecordOf(other, 'running', null, now));
    const kept = await b.compute.jobs.finishJob(other, ran([a.node.publicKey, b.node.publicKey].sort()));
    assert.equal(kept.status, 'complete');
  });

  it('stores a reading posted to both gateways once: the second answers it as a duplicate of the first', async () => {
    const [a, b] = await pair();
    const device = generateKeyPair();
    const signed = signRequestBody(device.secretKey, {
      h3_cell: DEVICE_CELLS[0]!,
      readings: signedReadings(device, DEVICE_CELLS[0]!, [
        { quantity: 'pm2_5', value: 10.3, unit: 'ug/m3', observed_at: iso(EPOCH_START + 5 * 60_000) },
      ]),
      created_at: iso(now),
    });
    const headers = { 'x-idn-signature': signed.signature };
    // The client's answer from A was lost; it sends the same signed body to B.
    const first = await a.post('/v1/telemetry', signed.body, headers);
    const second = await b.post('/v1/telemetry', signed.body, headers);
    assert.equal(first.status, 200, first.text);
    assert.equal(second.status, 200, second.text);
    const [fromA] = (first.body as { accepted: { record_id: string; duplicate: boolean }[] }).accepted;
    const [fromB] = (second.body as { accepted: { record_id: string; duplicate: boolean }[] }).accepted;
    assert.equal(fromA!.duplicate, false);
    assert.deepEqual(fromB, { ...fromA, duplicate: true }, "B acknowledges A's record");
    const listed = await b.get(`/v1/telemetry?cell=${DEVICE_CELLS[0]}`);
    assert.equal(listed.status, 200, listed.text);
    assert.equal((listed.body as { features: unknown[] }).features.length, 1, 'one stored copy');
  });
});
