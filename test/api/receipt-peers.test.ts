/**
 * Receipts across the gateways of one deployment (docs/protocol.md §15.4): two gateways, each with its own node key
 * and listing the other in SYNC_NODE_KEYS, share one proof store, as the chaos run's two gateways share one
 * MongoDB-protocol store. A job runs on A; its receipt, fetched from either gateway, verifies pinned to A: the
 * gateway serving it signs the heads of the sealers' logs with its own key, and A's job record names both node keys
 * (`node_keys`), so a head B signed is one A vouched for. A lone gateway's job record names none.
 */
import assert from 'node:assert/strict';
import { cellToChildren } from 'h3-js';
import { generateKeyPair } from '../../core/identity.js';
import { DEFAULT_EPOCH_GENESIS_MS } from '../../core/epoch.js';
import { signRequestBody } from '../../core/gates/signature.js';
import { verifyReceipt, type JobReceipt } from '../../core/receipt.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { startGateway } from '../helpers/gateway.js';
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

describe('receipts served by either gateway of a deployment sharing one proof store (SYNC_NODE_KEYS)', () => {
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

  async function post(gw: Gateway, cell: string, values: number[]) {
    const device = generateKeyPair();
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

  /** A fusion job on `gw` over readings posted to both gateways (so both keys wrote records it needs), sealed. */
  async function sealedJob(gw: Gateway, all: Gateway[]): Promise<string> {
    for (const [i, values] of [[10], [12, 11], [14], [15]].entries()) {
      await post(all[i % all.length]!, DEVICE_CELLS[i]!, values);
    }
    now = EPOCH_START + HOUR + 60_000;
    const signed = signJob(generateKeyPair(), {
      h3_cell: JOB_CELL,
      steps: [{ id: 'fuse', type: 'sensor_fusion', quantity: 'pm2_5' }],
      budget_credits: 0.1,
    });
    const res = await gw.post('/v1/compute', signed.body, signed.headers);
    assert.equal(res.status, 200, res.text);
    const job = res.body as { job_id: string; steps: { status: string }[] };
    assert.equal(job.steps[0]!.status, 'complete');
    await gw.writer.flush();
    for (const node of all) await sealThrough(gw.proofs, node.node, EPOCH + 1);
    return job.job_id;
  }

  it("verifies pinned to A a receipt of A's job fetched from B, whose heads B signed", async () => {
    const [a, b] = await pair();
    const jobId = await sealedJob(a, [a, b]);
    const keys = [a.node.publicKey, b.node.publicKey].sort();
    for (const gw of [b, a]) {
      const res = await gw.get(`/v1/compute/${jobId}/receipt`);
      assert.equal(res.status, 200, res.text);
      const receipt = res.body as JobReceipt;
      for (const options of [{ sealerPk: a.node.publicKey }, {}]) {
        const verdict = verifyReceipt(receipt, options);
        assert.ok(verdict.ok, JSON.stringify(verdict.checks.filter((c) => !c.ok)));
      }
      const jobRecord = receipt.records.find((r) => r.role === 'job')!.record!;
      assert.equal(jobRecord.address.pk, a.node.publicKey);
      assert.deepEqual((jobRecord.payload as { node_keys?: unknown }).node_keys, keys);
      assert.ok(
        receipt.seal_heads!.every((h) => h.head.signer_pk === gw.node.publicKey),
        'the serving gateway signs the heads',
      );
      // B is not the writer: pinned to B, the receipt is refused.
      assert.equal(verifyReceipt(receipt, { sealerPk: b.node.publicKey }).ok, false);
    }
  });

  it('writes no node_keys in the job record of a lone gateway', async () => {
    const gw = await startGateway({ clock: () => now, proofs: createSqliteProofStore(openSqlite(':memory:')) });
    gateways.push(gw);
    const jobId = await sealedJob(gw, [gw]);
    const receipt = (await gw.get(`/v1/compute/${jobId}/receipt`)).body as JobReceipt;
    const jobRecord = receipt.records.find((r) => r.role === 'job')!.record!;
    assert.equal('node_keys' in (jobRecord.payload as object), false);
    assert.ok(verifyReceipt(receipt, { sealerPk: gw.node.publicKey }).ok);
  });
});
