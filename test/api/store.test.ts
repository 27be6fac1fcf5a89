import assert from 'node:assert/strict';
import { generateKeyPair } from '../../core/identity.js';
import type { ProofRecord, Seal } from '../../core/proof-types.js';
import { createSeal } from '../../core/seal.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import type { ProofStore } from '../../store/proof-store.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { inferenceEntry, push, sealThrough } from '../helpers/proofs.js';

const worker = generateKeyPair();
const EPOCH = 8000;

interface BatchBody {
  error?: string;
  accepted: string[];
  duplicates: string[];
  rejected: { id: string; error: string; detail: string }[];
}

describe('proof store over HTTP (/store/*)', () => {
  let central: TestGateway;
  let local: ProofStore;
  let records: ProofRecord[];
  let seals: Seal[];

  beforeEach(async () => {
    central = await startGateway();
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
      const first = await push(central, worker, '/store/sync', records);
      assert.equal(first.status, 200, first.text);
      assert.deepEqual((first.body as BatchBody).accepted, ['a', 'b', 'c', 'berlin']);
      const again = await push(central, worker, '/store/sync', records);
      assert.equal(again.status, 200);
      assert.deepEqual((again.body as BatchBody).duplicates, ['a', 'b', 'c', 'berlin']);
    });

    it('answers 409 record_conflict for a known id with a different hash, still taking the rest', async () => {
      await push(central, worker, '/store/sync', [records[0]]);
      const other = createSqliteProofStore(openSqlite(':memory:'));
      const [impostor] = await other.appendRecords(worker, [
        { ...inferenceEntry('a', EPOCH), payload: { forged: true } },
      ]);
      const res = await push(central, worker, '/store/sync', [impostor, records[1]]);
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
      const res = await push(central, worker, '/store/sync', [tampered]);
      assert.equal(res.status, 400);
      assert.equal((res.body as BatchBody).rejected[0]?.error, 'invalid_record');
    });

    it('rejects a record written late for an epoch whose seal the store holds with 409 epoch_sealed', async () => {
      await push(central, worker, '/store/sync', records);
      assert.equal((await push(central, worker, '/store/epochs', seals)).status, 200);
      const other = createSqliteProofStore(openSqlite(':memory:'));
      const [late] = await other.appendRecords(worker, [inferenceEntry('late', EPOCH)]);
      const res = await push(central, worker, '/store/sync', [late]);
      assert.equal(res.status, 409);
      assert.equal((res.body as BatchBody).rejected[0]?.error, 'epoch_sealed');
    });
  });

  describe('POST /store/epochs', () => {
    it('accepts seals over exactly the records the store holds, in chain order', async () => {
      await push(central, worker, '/store/sync', records);
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
      );
      const res = await push(central, worker, '/store/epochs', seals);
      assert.equal(res.status, 409);
      const body = res.body as BatchBody;
      assert.equal(body.error, 'seal_mismatch');
      assert.ok(body.rejected.length >= 1);
    });

    it('refuses a seal whose predecessor has not arrived', async () => {
      await push(central, worker, '/store/sync', records);
      const res = await push(central, worker, '/store/epochs', [seals[seals.length - 1]]);
      assert.equal(res.status, 409);
      assert.match((res.body as BatchBody).rejected[0]!.detail, /not been received|genesis/);
    });

    it('refuses a different seal for an epoch already sealed', async () => {
      await push(central, worker, '/store/sync', records);
      await push(central, worker, '/store/epochs', seals);
      const forged = { ...seals[0]!, sealed_at: new Date(0).toISOString() };
      const res = await push(central, worker, '/store/epochs', [forged]);
      assert.equal(res.status, 400, 'an edited seal without a new signature is invalid');
      assert.equal((res.body as BatchBody).rejected[0]?.error, 'invalid_seal');
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
      await push(central, worker, '/store/sync', records);
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
    const [fresh] = await local.appendRecords(worker, [inferenceEntry('fresh', EPOCH + 3)]);
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
});
