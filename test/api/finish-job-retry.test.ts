/**
 * `finishJob` retried after an attempt died part-way (both found by the chaos run, docs/operations.md "Chaos
 * under load"):
 * - the `compute/job` record was written, the job not stored: the workflow task retried, its local activities
 *   re-ran and measured another latency, and the stored answer disagreed with the signed record (the receipt's
 *   `job_answer` check failed). The record's write wins by id, so the stored answer takes the record's values;
 * - the ledger entries were posted, the activity not completed: Temporal retried it on the other gateway, whose
 *   entries named itself as the platform, contradicted the posted ones, and the workflow failed.
 */
import assert from 'node:assert/strict';
import { generateKeyPair } from '../../core/identity.js';
import type { ScheduleResult } from '../../core/job-scheduler.js';
import type { ComputeJobInput } from '../../core/job-steps.js';
import { jobRecordOf } from '../../activities/compute/job-activities.js';
import { startGateway } from '../helpers/gateway.js';
import { startPeerGateways } from '../helpers/peer-gateways.js';

const NOW = Date.parse('2026-03-01T10:00:00Z');

const job: ComputeJobInput = {
  job_id: '3608836a-b19d-8959-89cb-66e599f15d75',
  requester_pk: generateKeyPair().publicKey,
  h3_cell: '861e8050fffffff',
  epoch: 1000,
  budget_credits: 0.1,
  proof_credits: 0.0001,
  steps: [{ id: 'ask', type: 'inference', messages: [{ role: 'user', content: 'hi' }], estimate: 0.006 }],
  plan: { order: ['ask'], levels: [['ask']] },
  jurisdiction: null,
  min_tier: null,
  request_hash: 'ab'.repeat(32),
  created_at: new Date(NOW).toISOString(),
};

/** One attempt's result: the same step (its first attempt's record and cost), measured at `latencyMs`. */
const attempt = (workerPk: string, latencyMs: number): ScheduleResult => ({
  status: 'complete',
  charged: 0.004,
  error: null,
  steps: [
    {
      id: 'ask',
      type: 'inference',
      status: 'complete',
      output: { text: 'ok' },
      latency_ms: latencyMs,
      worker_pk: workerPk,
      cost: 0.004,
      record_id: null,
    },
  ],
});

describe('finishJob retried after an attempt died part-way', function () {
  this.timeout(20_000);

  it("stores the answer the record binds, not the re-run's latency", async () => {
    const gw = await startGateway({ clock: () => NOW });
    try {
      const worker = generateKeyPair().publicKey;
      await gw.jobs.claim(jobRecordOf(job, 'running', null, NOW));
      // The first attempt writes the record, then its process dies before the job is stored.
      const finish = gw.jobs.finish.bind(gw.jobs);
      gw.jobs.finish = () => Promise.reject(new Error('the process died'));
      await assert.rejects(gw.compute.jobs.finishJob(job, attempt(worker, 1886)), /the process died/);
      gw.jobs.finish = finish;

      const answer = await gw.compute.jobs.finishJob(job, attempt(worker, 3741));
      assert.equal(answer.steps[0]!.latency_ms, 1886, "the answer is the record's");

      const stored = await gw.get(`/v1/compute/${job.job_id}`);
      assert.equal(stored.status, 200, stored.text);
      const body = stored.body as { steps: { latency_ms: number }[]; proof: { record_id: string } };
      const record = await gw.get(`/store/proof/${encodeURIComponent(body.proof.record_id)}`);
      assert.equal(record.status, 200, record.text);
      const payload = (record.body as { record: { payload: { steps: { latency_ms: number }[] } } }).record.payload;
      assert.equal(payload.steps[0]!.latency_ms, 1886, 'the record is the first attempt');
      assert.equal(body.steps[0]!.latency_ms, payload.steps[0]!.latency_ms, 'GET /v1/compute agrees with the record');
    } finally {
      await gw.close();
    }
  });

  it('posts the same ledger entries when the other gateway of the deployment retries it', async () => {
    const [gwA, gwB] = await startPeerGateways(() => NOW);
    const a = gwA.node;
    try {
      const worker = generateKeyPair().publicKey;
      const second = { ...job, job_id: '074cecb9-cfce-8757-8e08-47a697c73cbb' };
      await gwA.jobs.claim(jobRecordOf(second, 'running', null, NOW));
      await gwA.compute.jobs.finishJob(second, attempt(worker, 12));
      const before = await gwA.ledger.jobEntries(second.job_id);
      assert.ok(before.some((e) => e.kind === 'proof_fee' && e.account_pk === a.publicKey));

      // A's activity died after posting; Temporal runs it again on B.
      const answer = await gwB.compute.jobs.finishJob(second, attempt(worker, 15));
      assert.equal(answer.status, 'complete');
      const after = await gwA.ledger.jobEntries(second.job_id);
      assert.deepEqual(after, before, 'the retry posted nothing new and contradicted nothing');
    } finally {
      await gwA.close();
      await gwB.close();
    }
  });

  it("posts a re-run's entries on the other gateway against the first run's platform account", async () => {
    const [gwA, gwB] = await startPeerGateways(() => NOW);
    const a = gwA.node;
    try {
      const worker = generateKeyPair().publicKey;
      const first = { ...job, job_id: '5e95fa1d-0a26-8bd0-9b1d-b3a66d937584' };
      await gwA.jobs.claim(jobRecordOf(first, 'running', null, NOW));
      // Run 1 on A: the step completed and was charged, then the job failed for a transient reason.
      const failed: ScheduleResult = {
        ...attempt(worker, 10),
        status: 'failed',
        error: { step_id: 'ask', code: 'store_unavailable', detail: 'the gateway was out of reach' },
      };
      await gwA.compute.jobs.finishJob(first, failed);
      // The same request replayed on B re-runs it (run 2), the completed step carried.
      const rerun = { ...first, run: 2 };
      await gwB.jobs.retry(jobRecordOf(rerun, 'running', null, NOW));
      const answer = await gwB.compute.jobs.finishJob(rerun, attempt(worker, 10));
      assert.equal(answer.status, 'complete');
      const entries = await gwA.ledger.jobEntries(first.job_id);
      const fees = entries.filter((e) => e.kind === 'proof_fee');
      assert.ok(fees.length > 0 && fees.every((e) => e.account_pk === a.publicKey), 'the proof fee stays with A');
      const charged = entries.filter((e) => e.kind === 'job_charge').reduce((sum, e) => sum + e.amount_units, 0);
      assert.equal(-charged, Math.round(answer.settlement.total_credits * 1e8), 'charged what the settlement says');
    } finally {
      await gwA.close();
      await gwB.close();
    }
  });
});
