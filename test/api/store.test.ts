import assert from 'node:assert/strict';
import { epochWindow } from '../../core/epoch.js';
import { generateKeyPair } from '../../core/identity.js';
import { GENESIS_PREV_HASH, type ProofRecord, type Seal } from '../../core/proof-types.js';
import { createSeal } from '../../core/seal.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import type { ProofStore } from '../../store/proof-store.js';
import { startGateway } from '../helpers/gateway.js';
import { inferenceEntry, push, registerWorker, sealThrough, timeIn } from '../helpers/proofs.js';

const worker = generateKeyPair();
const EPOCH = 8000;

interface BatchBody {
  error?: string;
  accepted: string[];
  duplicates: string[];
  rejected: { id: string; error: string; detail: string }[];
}

describe('proof store over HTTP (/store/*)', () => {
  let central: Awaited<ReturnType<typeof startGateway>>;
  let local: ProofStore;
  let records: ProofRecord[];
  let seals: Seal[];

  // The central store's clock: inside EPOCH + 2, so EPOCH + 1 is still in the sync window and EPOCH is not.
  let now: number;

  beforeEach(async () => {
    now = timeIn(EPOCH + 2);
    central = await startGateway({ clock: () => now });
    await registerWorker(central.workers, worker);
    local = createSqliteProofStore(openSqlite(':memory:'));
    records = await local.appendRecords(worker, [
      inferenceEntry('a', EPOCH),
      inferenceEntry('b', EPOCH),
      inferenceEntry('c', EPOCH, '891e8050003ffff'), // resolution 9 inside the Rome resolution-5 cell
      inferenceEntry('berlin', EPOCH + 1, '861f1d48fffffff'),
    ]);
    seals = await sealThrough(local, worker, EPOCH + 1);
  });
  afterEach(() => central.close());

  describe('POST /store/sync', () => {
    it('requires a signed push', async () => {
      const res = await central.post('/store/sync', { records });
      assert.equal(res.status, 401);
      assert.equal((res.body as { error: string }).error, 'signature_required');
    });

    it('accepts a batch, and a re-sent batch is a no-op listed as duplicates', async () => {
      const first = await push(central, worker, '/store/sync', records, seals);
      assert.equal(first.status, 200, first.text);
      assert.deepEqual((first.body as BatchBody).accepted, ['a', 'b', 'c', 'berlin']);
      const again = await push(central, worker, '/store/sync', records, seals);
      assert.equal(again.status, 200);
      assert.deepEqual((again.body as BatchBody).duplicates, ['a', 'b', 'c', 'berlin']);
    });

    it('answers 409 record_conflict for a known id with a different hash, still taking the rest', async () => {
      await push(central, worker, '/store/sync', [records[0]], seals);
      const other = createSqliteProofStore(openSqlite(':memory:'));
      const [impostor] = await other.appendRecords(worker, [
        { ...inferenceEntry('a', EPOCH), payload: { forged: true } },
      ]);
      const res = await push(central, worker, '/store/sync', [impostor, records[1]], seals);
      assert.equal(res.status, 409);
      const body = res.body as BatchBody;
      assert.equal(body.error, 'record_conflict');
      assert.deepEqual(body.accepted, ['b']);
      assert.deepEqual(
        body.rejected.map((r) => [r.id, r.error]),
        [['a', 'record_conflict']],
      );
    });

    it('rejects a record whose hash or signature does not check as invalid_record', async () => {
      const tampered = { ...records[1]!, payload: { text: 'rewritten' } };
      const res = await push(central, worker, '/store/sync', [tampered], seals);
      assert.equal(res.status, 400);
      assert.equal((res.body as BatchBody).rejected[0]?.error, 'invalid_record');
    });

    it('rejects a record written late for an epoch whose seal the store holds with 409 epoch_sealed', async () => {
      await push(central, worker, '/store/sync', records, seals);
      assert.equal((await push(central, worker, '/store/epochs', seals)).status, 200);
      const other = createSqliteProofStore(openSqlite(':memory:'));
      const [late] = await other.appendRecords(worker, [inferenceEntry('late', EPOCH)]);
      const res = await push(central, worker, '/store/sync', [late], seals);
      assert.equal(res.status, 409);
      assert.equal((res.body as BatchBody).rejected[0]?.error, 'epoch_sealed');
    });
  });

  describe('POST /store/epochs', () => {
    it('accepts seals over exactly the records the store holds, in chain order', async () => {
      await push(central, worker, '/store/sync', records, seals);
      const res = await push(central, worker, '/store/epochs', [...seals].reverse());
      assert.equal(res.status, 200, res.text);
      assert.equal((res.body as BatchBody).accepted.length, seals.length);
    });

    it('refuses a seal while a record of its epoch is missing (seal_mismatch)', async () => {
      await push(
        central,
        worker,
        '/store/sync',
        records.filter((r) => r.id !== 'b'),
        seals,
      );
      const res = await push(central, worker, '/store/epochs', seals);
      assert.equal(res.status, 409);
      const body = res.body as BatchBody;
      assert.equal(body.error, 'seal_mismatch');
      assert.ok(body.rejected.length >= 1);
    });

    it('refuses a seal whose predecessor has not arrived', async () => {
      await push(central, worker, '/store/sync', records, seals);
      const res = await push(central, worker, '/store/epochs', [seals[seals.length - 1]]);
      assert.equal(res.status, 409);
      assert.match((res.body as BatchBody).rejected[0]!.detail, /not been received|genesis/);
    });

    it('refuses a different seal for an epoch already sealed', async () => {
      await push(central, worker, '/store/sync', records, seals);
      await push(central, worker, '/store/epochs', seals);
      const forged = { ...seals[0]!, sealed_at: new Date(0).toISOString() };
      const res = await push(central, worker, '/store/epochs', [forged]);
      assert.equal(res.status, 400, 'an edited seal without a new signature is invalid');
      assert.equal((res.body as BatchBody).rejected[0]?.error, 'invalid_seal');
      // Named as the sync agent looks its seals up, so it can settle the refusal rather than resend forever.
      assert.equal((res.body as BatchBody).rejected[0]?.id, `${forged.sealer_pk}:${forged.epoch}`);
      const resigned = createSeal(worker.secretKey, {
        epoch: seals[0]!.epoch,
        records: records.filter((r) => r.address.epoch === seals[0]!.epoch),
        prevSealHash: seals[0]!.prev_epoch_hash,
        sealedAt: new Date(0).toISOString(),
      });
      const conflict = await push(central, worker, '/store/epochs', [resigned]);
      assert.equal(conflict.status, 409);
      assert.equal((conflict.body as BatchBody).rejected[0]?.error, 'seal_mismatch');
    });
  });

  describe('GET /store/query and /store/proof', () => {
    beforeEach(async () => {
      await push(central, worker, '/store/sync', records, seals);
      await push(central, worker, '/store/epochs', seals);
    });

    it('finds records by H3 containment, not string equality', async () => {
      const res = await central.get('/store/query?cell=851e8053fffffff');
      assert.equal(res.status, 200);
      const ids = (res.body as { records: ProofRecord[] }).records.map((r) => r.id).sort();
      assert.deepEqual(ids, ['a', 'b', 'c']);
    });

    it('filters by epoch range and collection, and pages with a cursor', async () => {
      const byEpoch = await central.get(`/store/query?epoch_start=${EPOCH + 1}&epoch_end=${EPOCH + 1}`);
      assert.deepEqual(
        (byEpoch.body as { records: ProofRecord[] }).records.map((r) => r.id),
        ['berlin'],
      );
      const tiles = await central.get('/store/query?collection=tile');
      assert.deepEqual((tiles.body as { records: ProofRecord[] }).records, []);
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const res = await central.get(`/store/query?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        const page = res.body as { records: ProofRecord[]; next_cursor: string | null };
        assert.ok(page.records.length <= 3);
        seen.push(...page.records.map((r) => r.id));
        cursor = page.next_cursor;
      } while (cursor !== null);
      assert.deepEqual(seen.sort(), ['a', 'b', 'berlin', 'c']);
    });

    it('validates query parameters', async () => {
      for (const query of ['limit=0', 'limit=1001', 'epoch_start=-1', 'collection=nope', 'epoch_start=5&epoch_end=2']) {
        const res = await central.get(`/store/query?${query}`);
        assert.equal(res.status, 400, query);
        assert.equal((res.body as { error: string }).error, 'invalid_request', query);
      }
      assert.equal(((await central.get('/store/query?cell=xyz')).body as { error: string }).error, 'invalid_cell');
    });

    it('proves a sealed record: record, seal, audit path, verified recomputed', async () => {
      const res = await central.get('/store/proof/b');
      assert.equal(res.status, 200);
      const body = res.body as {
        record: ProofRecord;
        seal: Seal;
        proof: { leaf_index: number; tree_size: number; hashes: string[] };
        verified: boolean;
      };
      assert.equal(body.verified, true);
      assert.equal(body.record.id, 'b');
      assert.equal(body.seal.epoch, EPOCH);
      assert.equal(body.proof.tree_size, 3);
      assert.equal(body.proof.leaf_index, 1);
    });

    it('answers 404 record_not_found for an unknown id', async () => {
      const res = await central.get('/store/proof/nope');
      assert.equal(res.status, 404);
      assert.equal((res.body as { error: string }).error, 'record_not_found');
    });
  });

  it('answers pending for a record whose epoch is not sealed yet', async () => {
    const [fresh] = await local.appendRecords(worker, [inferenceEntry('fresh', EPOCH + 2)]);
    await push(central, worker, '/store/sync', [fresh]);
    const res = await central.get('/store/proof/fresh');
    assert.equal(res.status, 200);
    assert.deepEqual(
      {
        seal: (res.body as { seal: unknown }).seal,
        verified: (res.body as { verified: boolean }).verified,
        pending: (res.body as { pending: boolean }).pending,
      },
      { seal: null, verified: false, pending: true },
    );
  });

  describe('who may write, what and how much (docs/security.md)', () => {
    const stranger = generateKeyPair();
    const rejections = (res: { body: unknown }) =>
      (res.body as BatchBody).rejected.map((r) => [r.id, r.error, r.detail] as const);

    it('refuses a push by a key that is neither a node key nor a registered worker: 403 writer_not_allowed', async () => {
      const own = await createSqliteProofStore(openSqlite(':memory:')).appendRecords(stranger, [
        inferenceEntry('s-1', EPOCH + 2),
      ]);
      const res = await push(central, stranger, '/store/sync', own);
      assert.equal(res.status, 403, res.text);
      assert.equal((res.body as { error: string }).error, 'writer_not_allowed');
      assert.equal((await central.get('/store/proof/s-1')).status, 404);
      const seal = await push(central, stranger, '/store/epochs', seals);
      assert.equal(seal.status, 403);
    });

    it('lets a worker push only its own records and seals, and no compute/job record or compute: id', async () => {
      const other = createSqliteProofStore(openSqlite(':memory:'));
      const [theirs] = await other.appendRecords(stranger, [inferenceEntry('s-1', EPOCH + 2)]);
      const [job] = await local.appendRecords(worker, [
        {
          ...inferenceEntry('compute:00000000-0000-8000-8000-000000000000', EPOCH + 2),
          collection_type: 'compute_job',
          payload_type: 'compute/job',
        },
      ]);
      const [posing] = await local.appendRecords(worker, [
        inferenceEntry('compute:00000000-0000-8000-8000-000000000001', EPOCH + 2),
      ]);
      const res = await push(central, worker, '/store/sync', [theirs, job, posing]);
      assert.equal(res.status, 403, res.text);
      assert.deepEqual(
        rejections(res).map(([id, error]) => [id, error]),
        [
          ['s-1', 'writer_not_allowed'],
          [job!.id, 'writer_not_allowed'],
          [posing!.id, 'writer_not_allowed'],
        ],
      );
      const strangerSeal = createSeal(stranger.secretKey, {
        epoch: EPOCH + 1,
        records: [],
        prevSealHash: GENESIS_PREV_HASH,
        sealedAt: new Date(now).toISOString(),
      });
      const seal = await push(central, worker, '/store/epochs', [strangerSeal]);
      assert.equal((seal.body as BatchBody).rejected[0]?.error, 'writer_not_allowed');
    });

    it('takes records of the open epoch and the one before; older ones only with their seal (409 seal_required)', async () => {
      const res = await push(central, worker, '/store/sync', records);
      assert.equal(res.status, 409, res.text);
      const body = res.body as BatchBody;
      assert.deepEqual(body.accepted, ['berlin'], 'EPOCH + 1 is in the window');
      assert.deepEqual(
        body.rejected.map((r) => [r.id, r.error]),
        [
          ['a', 'seal_required'],
          ['b', 'seal_required'],
          ['c', 'seal_required'],
        ],
      );
      // Another writer's seal, or a seal of another epoch, does not vouch for them.
      const wrong = await push(central, worker, '/store/sync', records.slice(0, 1), seals.slice(1));
      assert.equal((wrong.body as BatchBody).rejected[0]?.error, 'seal_required');
      const vouched = await push(central, worker, '/store/sync', records, seals);
      assert.equal(vouched.status, 200, vouched.text);
      assert.deepEqual((vouched.body as BatchBody).accepted, ['a', 'b', 'c']);
    });

    it('refuses records of future epochs and of epochs past SYNC_MAX_BACKFILL_HOURS, even sealed', async () => {
      const ahead = await local.appendRecords(worker, [inferenceEntry('ahead', 90_000)]);
      const res = await push(central, worker, '/store/sync', ahead);
      assert.equal(res.status, 400);
      assert.match(rejections(res)[0]![2], /epoch 90000 starts 2036-.*in the future/);

      now = timeIn(EPOCH + 2 + 200); // more than 168 epochs after EPOCH
      const old = await push(central, worker, '/store/sync', records, seals);
      assert.equal(old.status, 400);
      assert.match(rejections(old)[0]![2], /more than 168 epochs old/);
    });

    it('refuses a seal of an epoch that has not ended: 409 epoch_open naming its end', async () => {
      const [open] = await local.appendRecords(worker, [inferenceEntry('open', EPOCH + 2)]);
      assert.equal((await push(central, worker, '/store/sync', [open, ...records], seals)).status, 200);
      await push(central, worker, '/store/epochs', seals);
      const early = createSeal(worker.secretKey, {
        epoch: EPOCH + 2,
        records: [open!],
        prevSealHash: seals[seals.length - 1]!.seal_hash,
        sealedAt: new Date(now).toISOString(),
      });
      const res = await push(central, worker, '/store/epochs', [early]);
      assert.equal(res.status, 409, res.text);
      assert.equal((res.body as BatchBody).error, 'epoch_open');
      const end = new Date(epochWindow(EPOCH + 2).end).toISOString();
      assert.match(rejections(res)[0]![2], new RegExp(`epoch ${EPOCH + 2} is still open: it ends at ${end}`));
      now = timeIn(EPOCH + 3, 0);
      assert.equal((await push(central, worker, '/store/epochs', [early])).status, 200);
    });

    it('bounds each pushing key per hour: 429 quota_exceeded with Retry-After, nothing stored', async () => {
      await central.close();
      central = await startGateway({
        clock: () => now,
        config: { proofSync: { nodeKeys: [], bounds: { itemsPerHour: 5, bytesPerHour: 1024 * 1024 } } },
      });
      await registerWorker(central.workers, worker);
      assert.equal((await push(central, worker, '/store/sync', records.slice(3))).status, 200);
      const many = await local.appendRecords(
        worker,
        ['p1', 'p2', 'p3', 'p4', 'p5'].map((id) => inferenceEntry(id, EPOCH + 2)),
      );
      const res = await push(central, worker, '/store/sync', many);
      assert.equal(res.status, 429, res.text);
      assert.equal((res.body as { error: string }).error, 'quota_exceeded');
      assert.ok(Number(res.headers.get('retry-after')) > 0);
      assert.equal((await central.get('/store/proof/p1')).status, 404);
      // The next hour brings a new budget.
      now = timeIn(EPOCH + 3, 0);
      assert.equal((await push(central, worker, '/store/sync', many.slice(0, 4))).status, 200);
    });
  });
});
