import assert from 'node:assert/strict';
import { generateKeyPair } from '../../core/identity.js';
import { createMongoProofStore } from '../../store/mongo/proof-store.js';
import { createMongoRateLimitStore } from '../../store/mongo/rate-limit-store.js';
import { describeProofStoreContract } from '../store/proof-store.contract.js';
import { describeRateLimitStoreContract } from '../store/rate-limit-store.contract.js';
import { useLiveMongo } from './live-env.js';

// MONGODB_URI points at FerretDB (scripts/engines.sh) or any MongoDB. Each test gets its own database, dropped
// afterwards, so a shared server is left as it was found.
describe('MongoDB-protocol server (live)', () => {
  const { uri, client, freshDb } = useLiveMongo();

  it('answers ping and reports its version', async () => {
    assert.deepEqual(await client.db('admin').command({ ping: 1 }), { ok: 1 });
    const info = await client.db('admin').command({ buildInfo: 1 });
    assert.match(String(info.version), /^\d+\.\d+/);
  });

  describeRateLimitStoreContract(`MongoDB protocol at ${uri}`, async () => {
    const db = freshDb();
    const store = await createMongoRateLimitStore(db);
    return { store, cleanup: async () => void (await db.dropDatabase()) };
  });

  describeProofStoreContract(`MongoDB protocol at ${uri}`, async () => {
    const db = freshDb();
    const store = await createMongoProofStore(db);
    return { store, cleanup: async () => void (await db.dropDatabase()) };
  });

  // WEB_CONCURRENCY (docs/operations.md): two gateway processes write as one node key into one database. Each
  // store instance caches its writer's tail; a batch whose seqs the other took is planned again, never lost.
  it('keeps seqs gapless for one signer across two store instances, as two processes would', async () => {
    const db = freshDb();
    try {
      const [a, b] = [await createMongoProofStore(db), await createMongoProofStore(db)];
      const signer = generateKeyPair();
      const batch = (prefix: string) =>
        Array.from({ length: 10 }, (_, i) => ({
          id: `${prefix}-${i}`,
          h3_cell: '861e8050fffffff',
          epoch: 5,
          collection_type: 'inference' as const,
          payload_type: 'hive/inference' as const,
          payload: { n: i },
          written_at: '2026-01-01T05:00:01.000Z',
        }));
      const written = await Promise.all(
        Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? a : b).appendRecords(signer, batch(`p${i}`))),
      );
      const seqs = written
        .flat()
        .map((r) => r.seq)
        .sort((x, y) => x - y);
      assert.deepEqual(
        seqs,
        Array.from({ length: 80 }, (_, i) => i + 1),
      );
      assert.equal((await a.recordsOfEpoch(signer.publicKey, 5)).length, 80);
    } finally {
      await db.dropDatabase();
    }
  });
});
