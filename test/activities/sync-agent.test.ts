import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sealDueEpochs } from '../../activities/proof/epoch-sealer.js';
import { createSyncAgent, SyncError } from '../../activities/proof/sync-agent.js';
import { DEFAULT_EPOCH_GENESIS_MS, epochWindow } from '../../core/epoch.js';
import { generateKeyPair } from '../../core/identity.js';
import type { ProofRecord } from '../../core/proof-types.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import type { ProofStore } from '../../store/proof-store.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { registerWorker, numberedEntry } from '../helpers/proofs.js';

const EPOCH = 7000;
const worker = generateKeyPair();

const entry = (i: number, epoch = EPOCH) => numberedEntry(i, epoch);

/**
 * Forwards to the central gateway. For the request numbered `dropAnswerOf` it lets the central store process
 * it, then destroys the client's connection before the answer arrives: the worst case for exactly-once delivery.
 */
async function flakyProxy(target: string) {
  const state = { dropAnswerOf: 0, forwarded: 0 };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const number = ++state.forwarded;
      const upstream = request(new URL(req.url ?? '/', target), { method: req.method, headers: req.headers }, (up) => {
        const body: Buffer[] = [];
        up.on('data', (c: Buffer) => body.push(c));
        up.on('end', () => {
          if (number === state.dropAnswerOf) {
            res.socket?.destroy(); // committed upstream, never acknowledged downstream
            return;
          }
          res.writeHead(up.statusCode ?? 502, up.headers);
          res.end(Buffer.concat(body));
        });
      });
      upstream.end(Buffer.concat(chunks));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, state, close: () => server.close() };
}

async function allCentralRecords(central: TestGateway): Promise<ProofRecord[]> {
  const out: ProofRecord[] = [];
  let cursor: string | null = null;
  do {
    const res = await central.get(`/store/query?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    assert.equal(res.status, 200, res.text);
    const page = res.body as { records: ProofRecord[]; next_cursor: string | null };
    out.push(...page.records);
    cursor = page.next_cursor;
  } while (cursor !== null);
  return out;
}

describe('SyncAgent: worker store → central store', () => {
  let central: Awaited<ReturnType<typeof startGateway>>;
  let local: ProofStore;
  let proxy: Awaited<ReturnType<typeof flakyProxy>>;
  // The central store's clock: two epochs after EPOCH, so EPOCH is past its sync window (records need seals).
  let now: number;

  beforeEach(async () => {
    now = epochWindow(EPOCH + 2).start + 61_000;
    central = await startGateway({ clock: () => now });
    await registerWorker(central.workers, worker);
    local = createSqliteProofStore(openSqlite(':memory:'));
    proxy = await flakyProxy(central.url);
  });
  afterEach(async () => {
    proxy.close();
    await central.close();
  });

  it('delivers every record and seal exactly once although answers are lost mid-sync', async () => {
    await local.appendRecords(
      worker,
      Array.from({ length: 250 }, (_, i) => entry(i + 1)),
    );
    await local.appendRecords(
      worker,
      Array.from({ length: 40 }, (_, i) => entry(i + 1, EPOCH + 1)),
    );
    const seals = await sealDueEpochs({
      store: local,
      signer: worker,
      now,
      genesisMs: DEFAULT_EPOCH_GENESIS_MS,
      graceMs: 60_000,
    });
    assert.equal(seals.length, 2);

    // First agent: the central store commits the second batch, but its answer is lost; the agent "crashes".
    const first = createSyncAgent({ store: local, centralUrl: proxy.url, signer: worker, batchSize: 100 });
    proxy.state.dropAnswerOf = 2; // batch 1 is acknowledged; batch 2 is stored centrally but its answer is lost
    await assert.rejects(first.syncOnce(), SyncError);
    assert.equal((await local.unsyncedRecords(1000)).length, 290 - 100, 'only the acknowledged batch is marked');

    // A new agent over the same local store (the restart) finishes the job.
    const second = createSyncAgent({ store: local, centralUrl: proxy.url, signer: worker, batchSize: 100 });
    const round = await second.syncOnce();
    assert.equal(round.records, 190);
    assert.equal(round.seals, 2);
    assert.equal(round.refused, 0);

    const records = await allCentralRecords(central);
    assert.equal(records.length, 290);
    assert.equal(new Set(records.map((r) => r.id)).size, 290, 'no record twice');
    assert.deepEqual(await local.unsyncedRecords(10), []);
    assert.deepEqual(await local.unsyncedSeals(10), []);

    // The central store proves a synced record against the synced seal.
    const proof = await central.get(`/store/proof/${encodeURIComponent(entry(17).id)}`);
    assert.equal(proof.status, 200);
    assert.equal((proof.body as { verified: boolean }).verified, true);
  });

  it('keeps records older than the window unsynced until they are sealed here, then sends them with the seal', async () => {
    // A worker back after being offline: its EPOCH records are not sealed yet (its sealer has not run).
    await local.appendRecords(worker, [entry(1), entry(2)]);
    await local.appendRecords(worker, [entry(1, EPOCH + 2)]);
    const agent = createSyncAgent({ store: local, centralUrl: central.url, signer: worker });
    const round = await agent.syncOnce();
    assert.deepEqual([round.records, round.refused], [1, 0], 'the fresh record is in; the old ones wait');
    assert.deepEqual(
      (await local.unsyncedRecords(10)).map((r) => r.id),
      [entry(1).id, entry(2).id],
      'seal_required is not a refusal for good',
    );

    await sealDueEpochs({ store: local, signer: worker, now, genesisMs: DEFAULT_EPOCH_GENESIS_MS, graceMs: 60_000 });
    const after = await agent.syncOnce();
    assert.deepEqual([after.records, after.seals, after.refused], [2, 2, 0]);
    assert.equal((await allCentralRecords(central)).length, 3);
    const proof = await central.get(`/store/proof/${encodeURIComponent(entry(2).id)}`);
    assert.equal((proof.body as { verified: boolean }).verified, true);
  });

  it('keeps everything unsynced while the central store is down, then catches up', async () => {
    now = epochWindow(EPOCH).start + 30 * 60_000;
    await local.appendRecords(worker, [entry(1), entry(2)]);
    const down = createSyncAgent({
      store: local,
      centralUrl: 'http://127.0.0.1:9',
      signer: worker,
      requestTimeoutMs: 2000,
    });
    await assert.rejects(down.syncOnce(), SyncError);
    assert.equal((await local.unsyncedRecords(10)).length, 2);
    const up = createSyncAgent({ store: local, centralUrl: central.url, signer: worker });
    assert.equal((await up.syncOnce()).records, 2);
    assert.equal((await allCentralRecords(central)).length, 2);
  });
});
