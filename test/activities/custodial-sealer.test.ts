import assert from 'node:assert/strict';
import { DEFAULT_CUSTODY_GRACE_MS, sealOrphanedEpochs } from '../../activities/proof/custodial-sealer.js';
import { DEFAULT_SEAL_GRACE_MS, sealDueEpochs } from '../../activities/proof/epoch-sealer.js';
import { createProofIngest } from '../../activities/proof/proof-ingest.js';
import { verifyRecordAt } from '../../bin/record-verifier.js';
import { DEFAULT_EPOCH_GENESIS_MS, epochAt, epochWindow } from '../../core/epoch.js';
import { generateKeyPair } from '../../core/identity.js';
import type { ProofBundle } from '../../core/proof-bundle.js';
import { verifyProofBundle } from '../../core/proof-bundle.js';
import { checkSeal, checkSealChain, createSeal } from '../../core/seal.js';
import type { NewRecord } from '../../store/proof-store.js';
import { startGateway } from '../helpers/gateway.js';
import { registration } from '../store/worker-registry.contract.js';
import { checkSealHead } from '../../core/seal-log.js';

const GENESIS = DEFAULT_EPOCH_GENESIS_MS;
const HOUR = 3_600_000;

const entry = (id: string, epoch: number): NewRecord => ({
  id,
  h3_cell: '861e8050fffffff',
  epoch,
  collection_type: 'tile',
  payload_type: 'tile/vector',
  payload: { z: 12, id },
  written_at: new Date(epochWindow(epoch, GENESIS).start + 5000).toISOString(),
});

// A worker seals one epoch itself, syncs records of the next (still open) one, leaves and never returns: once it
// has been gone the custody grace, the central store seals that epoch with its node key, and every record has a
// proof that verifies offline and says it is custodial.
describe('custodial seals (activities/proof/custodial-sealer.ts)', () => {
  it("a worker gone for good: its open epoch's records get verifiable proofs marked custodial", async () => {
    const gw = await startGateway();
    try {
      const worker = generateKeyPair();
      const now = Date.now();
      // Half-way through its hour: within a minute of the hour's end the drain margin reaches the next epoch,
      // which the custodian then seals as well (empty), and this test would fail at hh:59 (as it once did in CI).
      const lastAlive = epochWindow(epochAt(now - 3 * 24 * HOUR, GENESIS), GENESIS).start + 30 * 60_000;
      const open = epochAt(lastAlive, GENESIS);
      // Its own seal of the epoch before: the custodial seal continues its chain.
      await gw.proofs.appendRecords(worker, [entry('own-1', open - 1)]);
      await sealDueEpochs({
        store: gw.proofs,
        signer: worker,
        now: epochWindow(open, GENESIS).start + DEFAULT_SEAL_GRACE_MS,
        genesisMs: GENESIS,
        graceMs: DEFAULT_SEAL_GRACE_MS,
      });
      // Records of its last epoch, synced before it left; it never sealed that epoch.
      await gw.proofs.appendRecords(worker, [entry('orphan-1', open), entry('orphan-2', open)]);
      await gw.workers.register(registration({ pk: worker.publicKey }), lastAlive);
      await gw.workers.leave(worker.publicKey, 1, lastAlive);

      const custody = (at: number) =>
        sealOrphanedEpochs({
          store: gw.proofs,
          signer: gw.node,
          workers: gw.workers,
          now: at,
          genesisMs: GENESIS,
          graceMs: DEFAULT_SEAL_GRACE_MS,
          custodyMs: DEFAULT_CUSTODY_GRACE_MS,
        });
      assert.deepEqual(await custody(lastAlive + DEFAULT_CUSTODY_GRACE_MS - 1000), [], 'not before the grace');
      const made = await custody(now);
      assert.deepEqual(
        made.map((s) => [s.sealer_pk, s.epoch, s.custodian_pk, s.record_count]),
        [[worker.publicKey, open, gw.node.publicKey, 2]],
        'only its last epoch, not every empty hour since',
      );
      // The custodial sealer emits the head of the worker's log, signed by the node and stored (docs/protocol.md §15.4).
      const head = await gw.proofs.sealHead(worker.publicKey, gw.node.publicKey);
      assert.ok(head !== null, 'the head of the log is stored at sealing');
      assert.equal(checkSealHead(head).ok, true);
      assert.equal(head.tree_size, (await gw.proofs.sealsOf(worker.publicKey)).length);
      const state = await gw.proofs.sealLogState(worker.publicKey);
      assert.deepEqual(await custody(now), [], 'nothing twice');
      assert.deepEqual(await gw.proofs.sealLogState(worker.publicKey), state, 'the log is not extended twice');
      assert.deepEqual(await gw.proofs.sealHead(worker.publicKey, gw.node.publicKey), head);
      assert.deepEqual(
        checkSealChain(await gw.proofs.sealsOf(worker.publicKey)),
        [],
        'one chain, writer then custodian',
      );

      for (const id of ['orphan-1', 'orphan-2']) {
        const bundle = (await gw.get(`/store/proof/${id}`)).body as ProofBundle;
        const verdict = verifyProofBundle(bundle, id);
        assert.deepEqual(verdict, {
          verified: true,
          problems: [],
          seal_kind: 'custodial',
          sealed_by: gw.node.publicKey,
        });
        // `geofabric proof verify` says which kind it saw.
        const cli = await verifyRecordAt(gw.url, id);
        assert.equal(cli.verified, true, cli.problems.join('; '));
        assert.equal(cli.seal_kind, 'custodial');
        assert.equal(cli.sealed_by, gw.node.publicKey);
        // Unpinned, the custodian is named to compare; pinned to the node, it is trusted (docs/protocol.md §12.3).
        assert.match(cli.warnings?.[0] ?? '', /custodial seal by [0-9a-f]{64}, not pinned/);
        const pinned = await verifyRecordAt(gw.url, id, { nodePk: gw.node.publicKey });
        assert.deepEqual([pinned.verified, pinned.warnings], [true, undefined], pinned.problems.join('; '));
      }
      const own = await verifyRecordAt(gw.url, 'own-1');
      assert.deepEqual([own.verified, own.seal_kind, own.sealed_by], [true, 'writer', worker.publicKey]);

      // The custodian is covered by the signature: naming another custodian breaks the seal.
      const stored = (await gw.proofs.getSeal(worker.publicKey, open))!;
      assert.equal(checkSeal({ ...stored, custodian_pk: worker.publicKey }).ok, false);
    } finally {
      await gw.close();
    }
  });

  it('refuses a pushed custodial seal whose custodian is not a node key', async () => {
    const gw = await startGateway();
    try {
      const [worker, accomplice] = [generateKeyPair(), generateKeyPair()];
      await gw.workers.register(registration({ pk: worker.publicKey }), Date.now());
      const epoch = epochAt(Date.now(), GENESIS) - 2;
      const forged = createSeal(accomplice.secretKey, {
        writerPk: worker.publicKey,
        epoch,
        records: [],
        prevSealHash: '0'.repeat(64),
        sealedAt: new Date().toISOString(),
      });
      assert.equal(forged.custodian_pk, accomplice.publicKey);
      const ingest = createProofIngest({
        store: gw.proofs,
        roleOf: async (pk) => (pk === gw.node.publicKey ? 'node' : pk === worker.publicKey ? 'worker' : null),
        clock: Date.now,
        genesisMs: GENESIS,
      });
      const [verdict] = await ingest.ingestSeals([forged], { pusher: worker.publicKey });
      assert.equal(verdict?.status, 'rejected');
      assert.equal((verdict as { error?: string }).error, 'writer_not_allowed');
      assert.equal(await gw.proofs.getSeal(worker.publicKey, epoch), null);
    } finally {
      await gw.close();
    }
  });
});
