import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sealDueEpochs } from '../../activities/proof/epoch-sealer.js';
import { auditStore } from '../../activities/proof/store-audit.js';
import { createSyncAgent } from '../../activities/proof/sync-agent.js';
import { DEFAULT_EPOCH_GENESIS_MS, epochWindow } from '../../core/epoch.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import { GENESIS_PREV_HASH } from '../../core/proof-types.js';
import { createSealWithLevels } from '../../core/seal.js';
import { SQLITE_MIGRATIONS } from '../../store/sqlite/migrations.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore, type SqliteProofStore } from '../../store/sqlite/proof-store.js';
import { startGateway } from '../helpers/gateway.js';
import { registerWorker, numberedEntry } from '../helpers/proofs.js';

const EPOCH = 7000;

const entry = (i: number, epoch = EPOCH) => numberedEntry(i, epoch);
const entries = (n: number, epoch = EPOCH) => Array.from({ length: n }, (_, i) => entry(i + 1, epoch));

/**
 * A worker's own store as bin/worker.ts uses it: its records, its sealer (sealDueEpochs), its sync agent to a
 * central gateway, and the retention prune (docs/operations.md "Retention").
 */
describe("a worker's store retention: epochs the central store holds", () => {
  let central: Awaited<ReturnType<typeof startGateway>>;
  let local: SqliteProofStore;
  let worker: KeyPair;
  let now: number;

  const seal = () =>
    sealDueEpochs({ store: local, signer: worker, now, genesisMs: DEFAULT_EPOCH_GENESIS_MS, graceMs: 60_000 });
  const sync = () => createSyncAgent({ store: local, centralUrl: central.url, signer: worker }).syncOnce();
  const clean = async () => {
    const report = await auditStore(local);
    assert.deepEqual(report.problems, []);
    return report;
  };

  beforeEach(async () => {
    worker = generateKeyPair();
    now = epochWindow(EPOCH + 2).start + 61_000;
    central = await startGateway({ clock: () => now });
    await registerWorker(central.workers, worker);
    local = createSqliteProofStore(openSqlite(':memory:'));
  });
  afterEach(() => central.close());

  it('prunes the records of a sealed epoch whose seal the central store holds, and keeps its seal', async () => {
    await local.appendRecords(worker, entries(10));
    await local.appendRecords(worker, entries(3, EPOCH + 1));
    assert.equal((await seal()).length, 2);
    assert.deepEqual(await sync(), { records: 13, seals: 2, refused: 0 });

    const batch = await local.pruneHeldEpochs(EPOCH + 1, 10_000);
    assert.deepEqual(batch, { records: 10, epochs: 1, more: false });
    assert.deepEqual(await local.recordsOfEpoch(worker.publicKey, EPOCH), []);
    assert.equal(await local.getRecord(entry(1).id), null);
    // The epoch of the writer's latest record stays: the next append continues its seqs from it.
    assert.equal((await local.recordsOfEpoch(worker.publicKey, EPOCH + 1)).length, 3);
    assert.deepEqual(await local.prunedEpochs(worker.publicKey), [EPOCH]);
    assert.deepEqual(
      (await local.sealsOf(worker.publicKey)).map((s) => s.epoch),
      [EPOCH, EPOCH + 1],
      'seals stay',
    );
    // The central store still holds and proves every record.
    const proof = await central.get(`/store/proof/${encodeURIComponent(entry(4).id)}`);
    assert.equal((proof.body as { verified: boolean }).verified, true);
    // Nothing is due twice, and an epoch newer than the window is not touched.
    assert.deepEqual(await local.pruneHeldEpochs(EPOCH + 1, 10_000), { records: 0, epochs: 0, more: false });
    assert.deepEqual(await local.pruneHeldEpochs(EPOCH - 1, 10_000), { records: 0, epochs: 0, more: false });
  });

  it('never prunes an unsynced record', async () => {
    await local.appendRecords(worker, entries(4));
    await local.appendRecords(worker, entries(1, EPOCH + 1));
    const seals = await seal();
    // The central store held the seal, but this store has not had the acknowledgement of one record yet.
    await local.markSealsHeld(seals);
    const unsynced = (await local.unsyncedRecords(100)).filter((r) => r.id !== entry(2).id);
    await local.markRecordsSynced(unsynced.map((r) => r.id));
    assert.deepEqual(await local.pruneHeldEpochs(EPOCH + 1, 10_000), { records: 0, epochs: 0, more: false });
    assert.equal((await local.recordsOfEpoch(worker.publicKey, EPOCH)).length, 4);
    await sync();
    assert.equal((await local.pruneHeldEpochs(EPOCH + 1, 10_000)).records, 4);
  });

  it('never prunes an epoch whose seal the central store refused (it sealed it in custody first)', async () => {
    now = epochWindow(EPOCH).start + 30 * 60_000;
    const records = await local.appendRecords(worker, entries(3));
    assert.deepEqual(await sync(), { records: 3, seals: 0, refused: 0 });
    // The worker was gone past the custodial grace: the central store sealed its epoch with a node key.
    const custodian = generateKeyPair();
    const custodial = createSealWithLevels(custodian.secretKey, {
      epoch: EPOCH,
      records,
      prevSealHash: GENESIS_PREV_HASH,
      sealedAt: new Date(epochWindow(EPOCH + 1).start).toISOString(),
      writerPk: worker.publicKey,
    });
    await central.proofs.putSeal(custodial.seal, custodial.levels);

    now = epochWindow(EPOCH + 2).start + 61_000;
    await local.appendRecords(worker, entries(1, EPOCH + 1));
    await seal();
    const round = await sync();
    // Its own seal of the epoch, and the next one chained to it (docs/operations.md "Orphaned proofs").
    assert.equal(round.refused, 2, 'its seals are refused for good');
    assert.deepEqual(await local.unsyncedSeals(10), [], 'and counts as synced');
    assert.deepEqual(await local.pruneHeldEpochs(EPOCH + 1, 10_000), { records: 0, epochs: 0, more: false });
    assert.equal((await local.recordsOfEpoch(worker.publicKey, EPOCH)).length, 3);
  });

  it('prunes in bounded batches, and the store audits clean before, halfway and after', async () => {
    await local.appendRecords(worker, entries(10));
    await local.appendRecords(worker, entries(5, EPOCH + 1));
    await local.appendRecords(worker, entries(1, EPOCH + 2));
    now = epochWindow(EPOCH + 3).start + 61_000;
    await seal();
    await sync();
    assert.equal((await clean()).epochs_pruned, 0);

    assert.deepEqual(await local.pruneHeldEpochs(EPOCH + 2, 4), { records: 4, epochs: 0, more: true });
    const halfway = await clean();
    assert.equal(halfway.epochs_pruned, 1, 'the epoch under way is checked as what is left of it');
    assert.equal((await local.recordsOfEpoch(worker.publicKey, EPOCH)).length, 6);

    assert.deepEqual(await local.pruneHeldEpochs(EPOCH + 2, 4), { records: 4, epochs: 0, more: true });
    assert.deepEqual(await local.pruneHeldEpochs(EPOCH + 2, 4), { records: 4, epochs: 1, more: true });
    assert.deepEqual(await local.pruneHeldEpochs(EPOCH + 2, 4), { records: 3, epochs: 1, more: false });
    const after = await clean();
    assert.equal(after.epochs_pruned, 2);
    assert.equal(after.seals_checked, 3);
    assert.equal(after.records_checked, 1);

    // What is left of a pruned epoch is still checked: a record its seal does not cover is found.
    const partly = createSqliteProofStore(openSqlite(':memory:'));
    await partly.appendRecords(worker, entries(3));
    await partly.appendRecords(worker, entries(1, EPOCH + 1));
    const [first] = await sealDueEpochs({
      store: partly,
      signer: worker,
      now,
      genesisMs: DEFAULT_EPOCH_GENESIS_MS,
      graceMs: 60_000,
    });
    await partly.markRecordsSynced((await partly.unsyncedRecords(100)).map((r) => r.id));
    await partly.markSealsHeld([first!]);
    await partly.pruneHeldEpochs(EPOCH, 1);
    const left = await partly.recordsOfEpoch(worker.publicKey, EPOCH);
    assert.equal(left.length, 2);
    const [forged] = await createSqliteProofStore(openSqlite(':memory:')).appendRecords(worker, [
      { ...entry(9), payload: { forged: true } },
    ]);
    // Same writer, epoch and seq as a pruned record, another content: in place of what was left.
    const swapped = { ...forged!, seq: left[0]!.seq };
    const report = await auditStore({
      ...partly,
      recordsOfEpoch: async (pk, epoch) => (epoch === EPOCH ? [swapped, left[1]!] : partly.recordsOfEpoch(pk, epoch)),
    });
    assert.equal(report.problems.length, 1, JSON.stringify(report.problems));
    assert.match(report.problems[0]!.problem, /pruned here.*not in its seal/);
  });

  it('the next epoch still seals, chains to the last seal and syncs; the seqs go on', async () => {
    await local.appendRecords(worker, entries(6));
    await local.appendRecords(worker, entries(2, EPOCH + 1));
    await seal();
    await sync();
    await local.pruneHeldEpochs(EPOCH + 1, 10_000);
    const last = (await local.latestSeal(worker.publicKey))!;

    const [next] = await local.appendRecords(worker, [entry(1, EPOCH + 3)]);
    assert.equal(next!.seq, last.last_seq! + 1, 'the seqs continue from the kept latest record');
    now = epochWindow(EPOCH + 4).start + 61_000;
    const made = await seal();
    assert.deepEqual(
      made.map((s) => s.epoch),
      [EPOCH + 2, EPOCH + 3],
    );
    assert.equal(made[0]!.prev_epoch_hash, last.seal_hash);
    assert.equal(made[1]!.prev_epoch_hash, made[0]!.seal_hash);
    assert.deepEqual(await sync(), { records: 1, seals: 2, refused: 0 });
    assert.equal((await central.proofs.getSeal(worker.publicKey, EPOCH + 3))?.seal_hash, made[1]!.seal_hash);

    // The epoch that held the latest record is due now that a later one does.
    assert.deepEqual(await local.pruneHeldEpochs(EPOCH + 3, 10_000), { records: 2, epochs: 2, more: false });
    assert.deepEqual(await local.prunedEpochs(worker.publicKey), [EPOCH, EPOCH + 1, EPOCH + 2]);
    await clean();
    const centralAudit = await auditStore(central.proofs);
    assert.deepEqual(centralAudit.problems, []);
    assert.equal(centralAudit.records_checked, 9);
  });
});

describe('migration 0018: seals synced before it are pushed again', () => {
  it('marks them unsynced, so the central store tells which it holds', () => {
    const dir = mkdtempSync(join(tmpdir(), 'geofabric-retention-'));
    try {
      const file = join(dir, 'worker.db');
      const before = openSqlite(file, { migrations: SQLITE_MIGRATIONS.slice(0, -1) });
      before
        .prepare("INSERT INTO proof_seals (sealer_pk, epoch, seal_hash, json, synced) VALUES ('a', 1, 'h', '{}', 1)")
        .run();
      before.close();
      const after = openSqlite(file);
      try {
        const row = after.prepare('SELECT synced, held, pruned FROM proof_seals').get();
        assert.deepEqual({ ...(row as object) }, { synced: 0, held: 0, pruned: 0 });
      } finally {
        after.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
