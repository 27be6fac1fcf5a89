/**
 * The process killed during sealing (a fault test): `geofabric start` is SIGKILLed again and again while
 * its auto-sealer catches up on a long run of closed epochs, and restarted each time; once it is let finish,
 * every epoch has exactly one seal, each root is the one computed here from the seeded records, the chain links
 * from genesis with no epoch missing, proofs verify over HTTP, and `geofabric store audit` finds nothing wrong.
 *
 * The store is seeded through the store interface, as the node itself writes (its key from DATA_DIR/node-key.json,
 * where bin/node-key.ts keeps it): three epochs of 1,000 records spread over 1,500 closed epochs (EPOCH_GENESIS puts
 * epoch 0 1,500 hours back), so a catch-up is some 1,500 seal transactions and the kills land all over it: before
 * the first seal, between seals, and while a heavy epoch is read, hashed and stored.
 */
import assert from 'node:assert/strict';
import { execFile, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { lastDueEpoch } from '../../activities/proof/epoch-sealer.js';
import { readProof } from '../../activities/proof/proof-ingest.js';
import { EPOCH_MS, epochWindow } from '../../core/epoch.js';
import { bytesToHex } from '../../core/hex.js';
import type { KeyPair } from '../../core/identity.js';
import { EMPTY_ROOT, merkleRoot } from '../../core/merkle/tree.js';
import { recordLeaf } from '../../core/proof-record.js';
import { GENESIS_PREV_HASH, type ProofRecord, type Seal } from '../../core/proof-types.js';
import { checkSeal, checkSealChain } from '../../core/seal.js';
import { loadNodeKey } from '../../bin/node-key.js';
import type { NewRecord, ProofStore } from '../../store/proof-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { embeddedGatewayEnv, spawnGeofabric } from '../helpers/geofabric-process.js';

const ROOT = resolve(import.meta.dirname, '../..');
const GEOFABRIC = join(ROOT, 'bin', 'geofabric.ts');
/** Epochs from genesis to now: the catch-up seals all of them but the open one (and, in the grace, the last). */
const EPOCHS = 1500;
/** The epochs that hold records, and how many each. */
const HEAVY = [0, 700, 1400] as const;
const RECORDS_PER_EPOCH = 1000;
const GRACE_MS = 60_000; // SEAL_GRACE_SECONDS default

interface Started {
  child: ChildProcess;
  lines: Record<string, unknown>[];
  stderr: () => string;
}

async function waitFor<T>(what: string, probe: () => T | null | undefined, ms = 20_000, everyMs = 20): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = probe();
    if (value !== null && value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

describe('geofabric start killed while sealing', function () {
  this.timeout(120_000);
  let dataDir: string;
  let genesisIso: string;
  let genesisMs: number;
  let node: KeyPair;
  const seeded = new Map<number, ProofRecord[]>();
  // The test's own connection: it watches the sealer's progress (WAL: reads never block the writer).
  let watchDb: SqliteDatabase;
  let watch: ProofStore;
  let started: Started | undefined;

  function env(): NodeJS.ProcessEnv {
    return embeddedGatewayEnv(dataDir, {
      EPOCH_GENESIS: genesisIso,
      LEDGER: 'none',
      ANCHOR_EPOCHS: 'false',
      SEAL_CHECK_SECONDS: '1',
    });
  }

  function start(): Started {
    started = spawnGeofabric(['start'], env());
    return started;
  }

  const latestEpoch = async (): Promise<number> => (await watch.latestSeal(node.publicKey))?.epoch ?? -1;
  const due = () => lastDueEpoch(Date.now(), genesisMs, GRACE_MS);

  async function kill(child: ChildProcess): Promise<void> {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    }
  }

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'geofabric-seal-crash-'));
    // Epoch 0 starts EPOCHS hours before the current hour: epochs 0 … EPOCHS-1 are closed.
    genesisMs = Math.floor(Date.now() / EPOCH_MS) * EPOCH_MS - EPOCHS * EPOCH_MS;
    genesisIso = new Date(genesisMs).toISOString();
    // The key the service will load: DATA_DIR/node-key.json, created here as a first start would.
    node = loadNodeKey(dataDir, undefined).key;
    const db = openSqlite(join(dataDir, 'geofabric.db'));
    const store = createSqliteProofStore(db);
    for (const epoch of HEAVY) {
      const written = new Date(epochWindow(epoch, genesisMs).start + 1000).toISOString();
      const entries = Array.from({ length: RECORDS_PER_EPOCH }, (_, i): NewRecord => ({
        id: `inference:${epoch}:${i}`,
        h3_cell: '861e8050fffffff',
        epoch,
        collection_type: 'inference',
        payload_type: 'hive/inference',
        payload: { model: 'tinyllama', provider: 'worker', tokens_in: 12, tokens_out: 40, text: `answer ${i}` },
        written_at: written,
      }));
      seeded.set(epoch, await store.appendRecords(node, entries));
    }
    db.close();
    watchDb = openSqlite(join(dataDir, 'geofabric.db'));
    watch = createSqliteProofStore(watchDb);
  });

  after(async () => {
    if (started) await kill(started.child);
    watchDb?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('seals every epoch exactly once with the seeded roots after SIGKILLs at varied moments', async () => {
    const lastDue = due();
    assert.ok(lastDue >= HEAVY[HEAVY.length - 1]!, 'the heavy epochs are all due');

    // Each round kills once the sealer has passed a mark (plus a little), or a few ms into the start: before
    // the first seal, just before each heavy epoch (its seal is then under way), and between empty ones.
    const marks: { after: number; extraMs: number }[] = [
      { after: -2, extraMs: 0 }, // at the 'node key' line: the stores are open, sealing about to start
      { after: -1, extraMs: 0 }, // as soon as the first seal shows
      { after: HEAVY[1] - 1, extraMs: 0 }, // sealing epoch 700
      { after: 1000, extraMs: 1 }, // between empty epochs
      { after: HEAVY[2] - 1, extraMs: 0 }, // sealing epoch 1400
    ];
    const rounds: { mark: number; before: number; after: number; ms: number }[] = [];
    for (const mark of marks) {
      const before = await latestEpoch();
      const round = start();
      const began = Date.now();
      await waitFor('the node key line', () => {
        if (round.child.exitCode !== null) throw new Error(`start exited ${round.child.exitCode}: ${round.stderr()}`);
        return round.lines.some((l) => l.msg === 'node key') ? true : null;
      });
      if (mark.after >= -1) {
        const target = Math.max(mark.after, before);
        // Polls every millisecond or so: the kill lands within a few seals of the mark.
        for (let polls = 0; (await latestEpoch()) <= target && round.child.exitCode === null; polls++) {
          if (polls > 30_000) throw new Error(`the sealer never passed epoch ${target}`);
          await new Promise((r) => setTimeout(r, 1));
        }
      }
      if (mark.extraMs > 0) await new Promise((r) => setTimeout(r, mark.extraMs));
      await kill(round.child);
      rounds.push({ mark: mark.after, before, after: await latestEpoch(), ms: Date.now() - began });
    }
    const detail = JSON.stringify(rounds);
    // The kills interrupted the catch-up, and each restart picked it up where the last left it.
    assert.ok(
      rounds.filter((r) => r.after < lastDue).length >= marks.length - 1,
      `the sealer finished before the kills: ${detail}`,
    );
    for (let i = 1; i < rounds.length; i++) assert.ok(rounds[i]!.after >= rounds[i - 1]!.after, detail);

    // The last start is let finish; its public API serves the proofs meanwhile.
    const last = start();
    const url = await waitFor('the gateway', () => {
      if (last.child.exitCode !== null) throw new Error(`start exited ${last.child.exitCode}: ${last.stderr()}`);
      const listening = last.lines.find((l) => l.msg === 'geofabric gateway listening');
      return typeof listening?.url === 'string' ? listening.url : null;
    });
    let sealedThrough: number;
    for (const until = Date.now() + 20_000; ;) {
      sealedThrough = await latestEpoch();
      if (sealedThrough >= due()) break;
      if (Date.now() > until) throw new Error(`sealed through ${sealedThrough} only, due ${due()}: ${last.stderr()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const expectedRoot = (epoch: number) =>
      bytesToHex(merkleRoot((seeded.get(epoch) ?? []).toSorted((a, b) => a.seq - b.seq).map(recordLeaf)));
    for (const epoch of HEAVY) {
      const records = seeded.get(epoch)!;
      for (const record of [records[0]!, records[records.length >> 1]!, records[records.length - 1]!]) {
        const res = await fetch(`${url}/store/proof/${encodeURIComponent(record.id)}`);
        assert.equal(res.status, 200);
        const bundle = (await res.json()) as { verified: boolean; seal: Seal; record: ProofRecord };
        assert.equal(bundle.verified, true, `the proof of ${record.id} does not verify`);
        assert.equal(bundle.seal.epoch, epoch);
        assert.equal(bundle.seal.merkle_root, expectedRoot(epoch));
        assert.deepEqual(bundle.record, record);
      }
    }
    assert.equal(
      last.lines.filter((l) => l.msg === 'epoch sealing failed').length,
      0,
      JSON.stringify(last.lines.filter((l) => l.msg === 'epoch sealing failed')),
    );
    last.child.kill('SIGTERM');
    const [code] = (await once(last.child, 'exit')) as [number | null];
    assert.equal(code, 0, last.stderr());

    // Through the store: one seal per epoch 0 … sealedThrough, in order, each valid, chained, with its root.
    const seals = await watch.sealsOf(node.publicKey);
    assert.deepEqual(
      seals.map((s) => s.epoch),
      Array.from({ length: sealedThrough + 1 }, (_, i) => i),
      'every epoch sealed exactly once, none missing',
    );
    assert.deepEqual(checkSealChain(seals), []);
    let prev = GENESIS_PREV_HASH;
    for (const seal of seals) {
      assert.ok(checkSeal(seal).ok, `seal of epoch ${seal.epoch}: ${JSON.stringify(checkSeal(seal))}`);
      assert.equal(seal.prev_epoch_hash, prev, `the chain breaks at epoch ${seal.epoch}`);
      prev = seal.seal_hash;
      const records = seeded.get(seal.epoch) ?? [];
      assert.equal(seal.record_count, records.length, `epoch ${seal.epoch}`);
      assert.equal(seal.merkle_root, records.length === 0 ? bytesToHex(EMPTY_ROOT) : expectedRoot(seal.epoch));
    }
    // Each heavy epoch's stored tree gives every record a proof that verifies (a half-stored tree would not).
    for (const epoch of HEAVY) {
      for (const record of seeded.get(epoch)!.filter((_, i) => i % 97 === 0)) {
        assert.equal((await readProof(watch, record.id))?.verified, true, `the proof of ${record.id}`);
      }
    }

    // The operator's audit, as a CLI run over the same DATA_DIR.
    const audit = await promisify(execFile)(process.execPath, ['--import', 'tsx', GEOFABRIC, 'store', 'audit'], {
      cwd: ROOT,
      env: { ...env(), LOG_LEVEL: 'silent' },
      maxBuffer: 16 * 1024 * 1024,
    });
    const report = JSON.parse(audit.stdout) as {
      ok: boolean;
      problems: unknown[];
      records_checked: number;
      seals_checked: number;
    };
    assert.deepEqual(report.problems, []);
    assert.equal(report.ok, true);
    assert.equal(report.records_checked, HEAVY.length * RECORDS_PER_EPOCH);
    assert.equal(report.seals_checked, seals.length);
  });
});
