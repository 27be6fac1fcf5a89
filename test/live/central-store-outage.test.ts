/**
 * Fault bounds (docs/operations.md): the central store unavailable during sync, against a real MongoDB-protocol server. The
 * central gateway's MongoDB is reached through a TCP proxy the test can cut: while it is cut, pushes are
 * answered 503 `store_unavailable` (never a 500), the worker keeps every record and seal unsynced, and once
 * MongoDB is back one more round delivers them, each exactly once, including a batch cut off mid-sync.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { MongoClient } from 'mongodb';
import { createSyncAgent, SyncError } from '../../activities/proof/sync-agent.js';
import { generateKeyPair } from '../../core/identity.js';
import type { ProofRecord } from '../../core/proof-types.js';
import { createMongoProofStore } from '../../store/mongo/proof-store.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { startGateway } from '../helpers/gateway.js';
import { inferenceEntry, registerWorker, sealThrough, timeIn } from '../helpers/proofs.js';
import { requireEnv } from './live-env.js';

/** A TCP proxy to `target` that can drop every connection and refuse new ones, then let them through again. */
async function cuttableProxy(target: { host: string; port: number }) {
  let open = true;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    if (!open) {
      client.destroy();
      return;
    }
    const upstream = connect(target.port, target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    cut() {
      open = false;
      for (const s of sockets) s.destroy();
    },
    restore() {
      open = true;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('central store unavailable during sync (live MongoDB)', function () {
  this.timeout(60_000);
  const target = new URL(requireEnv('MONGODB_URI'));
  const worker = generateKeyPair();
  const EPOCH = 7000;

  it('keeps records and seals on the worker while MongoDB is cut off, then delivers each exactly once', async () => {
    const proxy = await cuttableProxy({ host: target.hostname, port: Number(target.port || 27017) });
    const client = new MongoClient(`mongodb://127.0.0.1:${proxy.port}/`, {
      directConnection: true,
      serverSelectionTimeoutMS: 1000,
      connectTimeoutMS: 1000,
    });
    await client.connect();
    const db = client.db(`geofabric_test_${randomUUID().replaceAll('-', '')}`);
    // The central store's clock is in EPOCH + 2 (EPOCH's records go with their seals); the worker is registered.
    const central = await startGateway({ proofs: await createMongoProofStore(db), clock: () => timeIn(EPOCH + 2) });
    await registerWorker(central.workers, worker);
    const local = createSqliteProofStore(openSqlite(':memory:'));
    try {
      await local.appendRecords(
        worker,
        Array.from({ length: 250 }, (_, i) => inferenceEntry(`outage-${i}`, EPOCH)),
      );
      await local.appendRecords(
        worker,
        Array.from({ length: 50 }, (_, i) => inferenceEntry(`outage-late-${i}`, EPOCH + 1)),
      );
      const seals = await sealThrough(local, worker, EPOCH + 1);
      assert.equal(seals.length, 2);
      const agent = createSyncAgent({ store: local, centralUrl: central.url, signer: worker, batchSize: 100 });

      // MongoDB gone before the round: the first push is answered 503, nothing is marked synced.
      proxy.cut();
      await assert.rejects(agent.syncOnce(), (error: unknown) => {
        assert.ok(error instanceof SyncError);
        assert.match(error.message, /HTTP 503/);
        assert.match(error.message, /store_unavailable/);
        return true;
      });
      assert.equal((await local.unsyncedRecords(1000)).length, 300);
      assert.equal((await local.unsyncedSeals(10)).length, 2);

      // Back, then cut again after the first batch is acknowledged: a round broken off mid-sync.
      proxy.restore();
      await assert.rejects(
        agent.syncOnce({
          onPushed: (kind, acknowledged) => {
            if (kind === 'records' && acknowledged >= 100) proxy.cut();
          },
        }),
        SyncError,
      );
      const left = (await local.unsyncedRecords(1000)).length;
      assert.ok(left > 0 && left < 300, `${left} records left unsynced`);

      // Back for good: one more round delivers the rest.
      proxy.restore();
      const round = await agent.syncOnce();
      assert.equal(round.records, left);
      assert.equal(round.seals, 2);
      assert.equal(round.refused, 0);
      assert.deepEqual(await local.unsyncedRecords(10), []);
      assert.deepEqual(await local.unsyncedSeals(10), []);

      // Exactly once: every record is stored centrally one time, and proves against the synced seal.
      const stored: ProofRecord[] = [];
      let cursor: string | null = null;
      do {
        const page = await central.get(
          `/store/query?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        assert.equal(page.status, 200, page.text);
        const body = page.body as { records: ProofRecord[]; next_cursor: string | null };
        stored.push(...body.records);
        cursor = body.next_cursor;
      } while (cursor !== null);
      assert.equal(stored.length, 300);
      assert.equal(new Set(stored.map((r) => r.id)).size, 300);
      assert.equal(await db.collection('records').countDocuments({}), 300);
      const proof = await central.get(`/store/proof/${encodeURIComponent('outage-7')}`);
      assert.equal((proof.body as { verified: boolean }).verified, true, proof.text);
    } finally {
      proxy.restore();
      await central.close();
      await db.dropDatabase().catch(() => undefined);
      await client.close();
      await proxy.close();
    }
  });
});
