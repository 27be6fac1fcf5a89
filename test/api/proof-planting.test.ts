/**
 * The planted-proof attack end to end over HTTP: learn a job id, push a record under
 * the id of the job's next run (`compute:<job_id>:run-2`) signed by another key, seal it, replay the job. The
 * requester's answer must carry the node's own record, and `proof verify --node-pk` must name the writer.
 */
import assert from 'node:assert/strict';
import { sealDueEpochs } from '../../activities/proof/epoch-sealer.js';
import { proofVerifyCommand } from '../../bin/proof-commands.js';
import { DEFAULT_EPOCH_GENESIS_MS, epochAt, epochWindow } from '../../core/epoch.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import type { ProofRecord } from '../../core/proof-types.js';
import { GENESIS_PREV_HASH } from '../../core/proof-types.js';
import { createSeal } from '../../core/seal.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { startFakeRuntime, type FakeRuntime } from '../helpers/fake-openai-runtime.js';
import { startGateway } from '../helpers/gateway.js';
import { TEST_NOW } from '../helpers/imagery-fixtures.js';
import { signJob } from '../helpers/jobs.js';
import { inferenceEntry, push, registerWorker } from '../helpers/proofs.js';

const WORKER_MODEL = 'lfm2.5-1.2b-instruct';
const FORGED_HASH = 'f'.repeat(64);
const alice = generateKeyPair();

interface Job {
  job_id: string;
  proof: { job_hash: string; verify_url: string; record_id: string };
}
interface Rejected {
  error: string;
  rejected: { id: string; error: string; detail: string }[];
}

describe('a job proof cannot be planted by another key (end to end over HTTP)', function () {
  this.timeout(20_000);
  let now: number;
  let broken: boolean;
  let runtime: FakeRuntime;
  const OPERATOR = 'operator-token';
  let gw: Awaited<ReturnType<typeof startGateway>>;

  beforeEach(async () => {
    now = TEST_NOW + 60_000;
    broken = true;
    runtime = await startFakeRuntime(WORKER_MODEL, () =>
      broken ? { status: 503 } : { content: 'the answer', usage: { prompt_tokens: 10, completion_tokens: 3 } },
    );
  });
  afterEach(async () => {
    await gw.close();
    await runtime.close();
  });

  const start = async (nodeKeys: string[] = []) => {
    gw = await startGateway({
      clock: () => now,
      swarm: { workerRuntimeUrl: runtime.url, workerModels: [WORKER_MODEL] },
      config: { proofSync: { nodeKeys }, operatorToken: OPERATOR },
    });
  };

  /** A job that fails for a transient reason (its runtime is down): a replay runs it again as run 2. */
  async function failedJob() {
    const signed = signJob(alice, {
      h3_cell: '861e8050fffffff',
      steps: [{ id: 'ask', type: 'inference', messages: [{ role: 'user', content: 'where?' }] }],
    });
    const down = await gw.post('/v1/compute', signed.body, signed.headers);
    assert.equal(down.status, 502, down.text);
    // The public list no longer shows ids (docs/security.md §4), but a job id is a capability that leaks (shared
    // links, logs): the attacker here holds it anyway, as the operator's list shows it, and must still fail.
    const recent = (await gw.get('/v1/compute/recent', { authorization: `Bearer ${OPERATOR}` })).body as {
      jobs: { job_id: string }[];
    };
    return { signed, jobId: recent.jobs[0]!.job_id };
  }

  /** The record an attacker signs with its own key under the id of the job's next run, claiming a job_hash. */
  async function plant(key: KeyPair, jobId: string, collection: 'compute_job' | 'inference' = 'compute_job') {
    const own = createSqliteProofStore(openSqlite(':memory:'));
    const [record] = await own.appendRecords(key, [
      {
        id: `compute:${jobId}:run-2`,
        h3_cell: '861e8050fffffff',
        epoch: epochAt(now),
        collection_type: collection,
        payload_type: collection === 'compute_job' ? 'compute/job' : 'hive/inference',
        payload: { version: 1, job_id: jobId, job_hash: FORGED_HASH, status: 'complete' },
        written_at: new Date(now).toISOString(),
      },
    ]);
    return record!;
  }

  /** The attacker's seal of the planted record's epoch (still open unless the clock moved on). */
  const sealOpenEpoch = (key: KeyPair, record: ProofRecord) =>
    createSeal(key.secretKey, {
      epoch: record.address.epoch,
      records: [record],
      prevSealHash: GENESIS_PREV_HASH,
      sealedAt: new Date(now).toISOString(),
    });

  async function replay(signed: ReturnType<typeof signJob>): Promise<Job> {
    broken = false;
    now += 5000;
    const up = await gw.post('/v1/compute', signed.body, signed.headers);
    assert.equal(up.status, 200, up.text);
    return up.body as Job;
  }

  it('refuses the plant from a self-made key and from a registered worker, and the seal of an open epoch', async () => {
    await start();
    const { signed, jobId } = await failedJob();
    const mallory = generateKeyPair();

    const planted = await plant(mallory, jobId);
    const stranger = await push(gw, mallory, '/store/sync', [planted]);
    assert.equal(stranger.status, 403, stranger.text);
    assert.equal((stranger.body as Rejected).error, 'writer_not_allowed');

    // Registered as a worker, it still may not write a job's proof, under any collection.
    await registerWorker(gw.workers, mallory, now);
    const disguised = await plant(mallory, jobId, 'inference');
    for (const record of [planted, disguised]) {
      const res = await push(gw, mallory, '/store/sync', [record]);
      assert.equal(res.status, 403, res.text);
      assert.deepEqual(
        (res.body as Rejected).rejected.map((r) => r.error),
        ['writer_not_allowed'],
      );
    }
    const seal = await push(gw, mallory, '/store/epochs', [sealOpenEpoch(mallory, planted)]);
    assert.equal(seal.status, 409, seal.text);
    assert.equal((seal.body as Rejected).error, 'epoch_open');
    assert.match(
      (seal.body as Rejected).rejected[0]!.detail,
      new RegExp(`ends at ${new Date(epochWindow(planted.address.epoch).end).toISOString()}`),
    );

    const job = await replay(signed);
    assert.equal(job.proof.record_id, `compute:${jobId}:run-2`);
    assert.notEqual(job.proof.job_hash, FORGED_HASH);
    const proof = (await gw.get(new URL(job.proof.verify_url, gw.url).pathname)).body as { record: ProofRecord };
    assert.equal(proof.record.address.pk, gw.node.publicKey, "the proof is the node's own record");
  });

  it("never adopts a planted record even from a trusted node key: the node's own goes under its scoped id", async () => {
    const rogue = generateKeyPair();
    await start([rogue.publicKey]);
    const { signed, jobId } = await failedJob();
    const planted = await plant(rogue, jobId);
    const res = await push(gw, rogue, '/store/sync', [planted]);
    assert.equal(res.status, 200, res.text);

    const job = await replay(signed);
    assert.notEqual(job.proof.job_hash, FORGED_HASH);
    assert.match(job.proof.record_id, new RegExp(`^compute:${jobId}:run-2:w-[0-9a-f]{32}$`));
    const proof = (await gw.get(new URL(job.proof.verify_url, gw.url).pathname)).body as { record: ProofRecord };
    assert.equal(proof.record.address.pk, gw.node.publicKey);
    assert.equal((proof.record.payload as { job_hash: string }).job_hash, job.proof.job_hash);

    // Once both epochs are sealed both records verify; `proof verify --node-pk` tells them apart.
    now = epochWindow(epochAt(now) + 1).start + 61_000;
    await sealDueEpochs({
      store: gw.proofs,
      signer: gw.node,
      now,
      genesisMs: DEFAULT_EPOCH_GENESIS_MS,
      graceMs: 60_000,
    });
    const rogueSeal = await push(gw, rogue, '/store/epochs', [sealOpenEpoch(rogue, planted)]);
    assert.equal(rogueSeal.status, 200, rogueSeal.text);
    assert.equal(((await gw.get(`/store/proof/${planted.id}`)).body as { verified: boolean }).verified, true);
    const verify = async (id: string) => {
      const out: unknown[] = [];
      const status = await proofVerifyCommand([id, '--url', gw.url, '--node-pk', gw.node.publicKey], (value) =>
        out.push(value),
      );
      return { status, out: out[0] as { verified: boolean; problems: string[] } };
    };
    const ours = await verify(job.proof.record_id);
    assert.deepEqual([ours.status, ours.out.problems], [0, []]);
    const theirs = await verify(planted.id);
    assert.equal(theirs.status, 1);
    assert.ok(theirs.out.problems.some((p) => p.startsWith(`written by ${rogue.publicKey}, not by node`)));
  });

  it('lets a registered worker push its own records of the open epoch', async () => {
    await start();
    const worker = generateKeyPair();
    await registerWorker(gw.workers, worker, now);
    const own = createSqliteProofStore(openSqlite(':memory:'));
    const records = await own.appendRecords(worker, [inferenceEntry('w-1', epochAt(now))]);
    assert.equal((await push(gw, worker, '/store/sync', records)).status, 200);
  });
});
