/**
 * The TypeScript client (clients/typescript, its own JCS, Ed25519 and receipt verifier) against a real gateway on
 * loopback: it signs and submits a delegated job, reads it back, fetches its receipt and verifies it offline.
 */
import assert from 'node:assert/strict';
import { GeofabricClient, GeofabricError } from '../../clients/typescript/src/index.js';
import { generateKeyPair } from '../../core/identity.js';
import { startFakeRuntime, type FakeRuntime } from '../helpers/fake-openai-runtime.js';
import { startGateway } from '../helpers/gateway.js';
import { TEST_NOW } from '../helpers/imagery-fixtures.js';
import { certFor } from '../helpers/jobs.js';
import { sealThrough } from '../helpers/proofs.js';
import { RECEIPT_JOB_MODEL, twoStepJob } from '../helpers/receipt-job.js';

describe('@geofabric/client against a gateway', function () {
  this.timeout(20_000);
  const now = TEST_NOW + 60_000;
  let runtime: FakeRuntime;
  let gw: Awaited<ReturnType<typeof startGateway>>;

  before(async () => {
    runtime = await startFakeRuntime(RECEIPT_JOB_MODEL, () => ({
      content: 'Villa Ada.',
      usage: { prompt_tokens: 5, completion_tokens: 3 },
    }));
    gw = await startGateway({
      clock: () => now,
      swarm: { workerRuntimeUrl: runtime.url, workerModels: [RECEIPT_JOB_MODEL] },
    });
  });
  after(async () => {
    await gw.close();
    await runtime.close();
  });

  it('submits a delegated job, gets it and its receipt, which verifies once sealed', async () => {
    const agent = generateKeyPair();
    const client = new GeofabricClient({ baseUrl: gw.url, secretKey: agent.secretKey });
    assert.equal(client.publicKey, agent.publicKey);
    const chain = [certFor(generateKeyPair(), agent.publicKey, {}, now)];
    const job = await client.submitJob(twoStepJob('client'), { wait: true, delegation: chain });
    assert.equal(job.status, 'complete');
    const jobId = job.job_id as string;
    assert.deepEqual(await client.getJob(jobId), job);

    const pending = await client.getReceipt(jobId);
    assert.equal(pending.status, 'pending');
    assert.equal(client.verifyReceipt(pending).failedCheck, 'sealed');
    assert.equal(client.verifyReceipt(pending, { allowPending: true }).ok, true);

    await sealThrough(gw.proofs, gw.node, job.epoch as number);
    const receipt = await client.getReceipt(jobId, { waitSealedMs: 5000 });
    assert.equal(receipt.status, 'complete');
    assert.deepEqual((receipt.request as { delegation_chain: unknown }).delegation_chain, chain);
    const verdict = client.verifyReceipt(receipt, { sealerPk: gw.node.publicKey });
    assert.deepEqual(
      verdict.checks.filter((c) => !c.ok),
      [],
    );
    assert.equal(verdict.ok, true);
  });

  it('throws GeofabricError with the code of an error answer', async () => {
    const client = new GeofabricClient({ baseUrl: gw.url });
    await assert.rejects(client.getReceipt('00000000-0000-8000-8000-000000000000'), (error: unknown) => {
      assert.ok(error instanceof GeofabricError);
      assert.equal(error.status, 404);
      assert.equal(error.code, 'job_not_found');
      return true;
    });
  });
});
