// Proof-store figures on the SQLite store (a WAL file under the OS temp dir, as a worker keeps it): appends per
// second, sealing a large epoch, and proof generation and verification in it. Prints nothing itself.
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ed25519 } from '@noble/curves/ed25519.js';
import { generateKeyPair, signMessage } from '../core/identity.js';
import { verifyInclusion } from '../core/merkle/inclusion.js';
import { hexToBytes } from '../core/hex.js';
import { recordLeaf } from '../core/proof-record.js';
import { GENESIS_PREV_HASH, type ProofRecord } from '../core/proof-types.js';
import { createSealOverTree, type EpochTree } from '../core/seal.js';
import type { NewRecord, ProofStore } from '../store/proof-store.js';
import { openSqlite, type SqliteDatabase } from '../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../store/sqlite/proof-store.js';
import type { SealProcessJob } from './seal-process.js';
import type { SealJob, SealProcessResult } from './seal-measure.js';

const CELL = '891e8052a3bffff';
const EPOCH = 5;

export async function withStore<T>(
  run: (store: ProofStore, db: SqliteDatabase, path: string) => Promise<T>,
): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'geofabric-bench-proofs-'));
  const path = join(dir, 'proofs.db');
  const db = openSqlite(path);
  try {
    return await run(createSqliteProofStore(db), db, path);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const entry = (i: number): NewRecord => ({
  id: `job-${i}:step-a`,
  h3_cell: CELL,
  epoch: EPOCH,
  collection_type: 'inference',
  payload_type: 'hive/inference',
  payload: { model: 'tinyllama', provider: 'worker', tokens_in: 12, tokens_out: 40, latency_ms: 812 },
  written_at: '2026-01-01T05:00:01.000Z',
});

/**
 * `appendRecords` end to end in batches of `batch`: seq assignment, record hash, Ed25519 signature (on the
 * Ed25519 pool's worker threads) and the insert, one write transaction per batch.
 */
export async function benchAppend(records = 20_000, batch = 1000): Promise<{ perSecond: number; records: number }> {
  return withStore(async (store) => {
    const signer = generateKeyPair();
    const start = performance.now();
    for (let from = 0; from < records; from += batch) {
      await store.appendRecords(
        signer,
        Array.from({ length: Math.min(batch, records - from) }, (_, i) => entry(from + i)),
      );
    }
    return { perSecond: records / ((performance.now() - start) / 1000), records };
  });
}

/**
 * Ed25519 signatures per second on this thread, over 64-hex texts as proof records sign them: node:crypto
 * (OpenSSL, what signMessage and the Ed25519 pool's workers run) and @noble/curves (pure JavaScript).
 */
export function benchSign(signatures = 20_000): { nodePerSecond: number; noblePerSecond: number } {
  const signer = generateKeyPair();
  const message = 'ab'.repeat(32);
  for (let i = 0; i < 500; i++) signMessage(signer.secretKey, message);
  let start = performance.now();
  for (let i = 0; i < signatures; i++) signMessage(signer.secretKey, message);
  const nodePerSecond = signatures / ((performance.now() - start) / 1000);
  const seed = hexToBytes(signer.secretKey);
  const bytes = new TextEncoder().encode(message);
  const few = Math.max(200, Math.floor(signatures / 10));
  start = performance.now();
  for (let i = 0; i < few; i++) ed25519.sign(bytes, seed);
  return { nodePerSecond, noblePerSecond: few / ((performance.now() - start) / 1000) };
}

/**
 * Records shaped like signed ones (hash and signature fields of the right length) but not hashed or signed:
 * what only the store costs. `ingestRecords` trusts its caller to have checked them, so it accepts these.
 */
export function unsignedBatch(pk: string, from: number, n: number): ProofRecord[] {
  const signature = 'cd'.repeat(64);
  return Array.from({ length: n }, (_, i) => ({
    version: 1 as const,
    id: `job-${from + i}:step-a`,
    address: { h3_cell: CELL, epoch: EPOCH, pk },
    collection_type: 'inference' as const,
    payload_type: 'hive/inference' as const,
    payload: entry(from + i).payload,
    seq: from + i + 1,
    written_at: '2026-01-01T05:00:01.000Z',
    record_hash: randomBytes(32).toString('hex'),
    signature,
  }));
}

/** The store's own share of an append (insert of records already signed), in batches of `batch`. */
export async function benchInsert(records = 100_000, batch = 1000): Promise<{ perSecond: number; records: number }> {
  return withStore(async (store) => {
    const pk = generateKeyPair().publicKey;
    let elapsed = 0;
    for (let from = 0; from < records; from += batch) {
      const chunk = unsignedBatch(pk, from, Math.min(batch, records - from));
      const start = performance.now();
      await store.ingestRecords(chunk);
      elapsed += performance.now() - start;
    }
    return { perSecond: records / (elapsed / 1000), records };
  });
}

export interface SealFigures {
  records: number;
  /** The seal in a sealer process of its own over the bench's store file (what an operator runs). */
  process: { ms: number; cpuMs: number; rssStartMiB: number; rssPeakMiB: number };
  /**
   * The same seal in the bench process (deleted again first): its RSS is the bench's, which already holds the
   * records it wrote and earlier sections' garbage, so `peak` there is not the seal's footprint.
   */
  inProcess: { ms: number; rssBeforeMiB: number; rssAfterMiB: number; processPeakMiB: number };
  /** Both seals were the same bytes (same key, time and records). */
  identical: boolean;
  /** Proof generation (sealedPath from stored pages) and verification, averaged over `samples` records. */
  proofMicros: number;
  verifyMicros: number;
  samples: number;
}

const mib = (bytes: number) => Math.round(bytes / 2 ** 20);
const SEALED_AT = '2026-01-01T06:01:00.000Z';

/**
 * Seals the job's epoch in a fresh process, run through tsx as the bench is: bench/seal-process.ts over a SQLite
 * file, or `script` (bench/mongo-seal-process.ts over MongoDB).
 */
export function sealInChildProcess<J extends SealJob = SealProcessJob>(
  job: J,
  script = './seal-process.ts',
): Promise<SealProcessResult> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(new URL(script, import.meta.url)), {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child.once('message', (result) => resolve(result as SealProcessResult));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`sealer process exited with ${code}`));
    });
    child.send(job);
  });
}

/**
 * Seals one epoch of `n` records the way the auto-sealer does (ProofStore.sealEpoch, the tree streamed into
 * its pages), first in the bench process, then — the seal deleted again — in a sealer process of its own
 * over the same file; then times inclusion proofs in it. The records are inserted first, outside the timings.
 */
export async function benchSeal(n = 1_000_000, samples = 2000): Promise<SealFigures> {
  return withStore(async (store, db, path) => {
    const signer = generateKeyPair();
    for (let from = 0; from < n; from += 5000) {
      await store.ingestRecords(unsignedBatch(signer.publicKey, from, Math.min(5000, n - from)));
    }
    const sign = (tree: EpochTree) =>
      createSealOverTree(signer.secretKey, {
        epoch: EPOCH,
        tree,
        prevSealHash: GENESIS_PREV_HASH,
        sealedAt: SEALED_AT,
      });

    const rssBefore = process.memoryUsage().rss;
    const t0 = performance.now();
    const { seal: first } = await store.sealEpoch(signer.publicKey, EPOCH, sign);
    const inProcessMs = performance.now() - t0;
    const rssAfter = process.memoryUsage().rss;
    const processPeak = process.resourceUsage().maxRSS * 1024;
    db.prepare('DELETE FROM proof_seal_nodes WHERE sealer_pk = ? AND epoch = ?').run(signer.publicKey, EPOCH);
    db.prepare('DELETE FROM proof_seals WHERE sealer_pk = ? AND epoch = ?').run(signer.publicKey, EPOCH);
    db.pragma('wal_checkpoint(TRUNCATE)');

    const child = await sealInChildProcess({ path, secretKey: signer.secretKey, epoch: EPOCH, sealedAt: SEALED_AT });
    const seal = (await store.getSeal(signer.publicKey, EPOCH))!;

    // Proofs for records spread over the epoch (read by id first, as GET /store/proof does, untimed).
    const picked: ProofRecord[] = [];
    for (let i = 0; i < samples; i++) {
      const record = await store.getRecord(`job-${Math.floor((i * n) / samples)}:step-a`);
      if (record) picked.push(record);
    }
    const root = hexToBytes(seal.merkle_root);
    const paths = [];
    const p0 = performance.now();
    for (const record of picked) paths.push(await store.sealedPath(record));
    const p1 = performance.now();
    const leafHashes = picked.map(recordLeaf);
    const v0 = performance.now();
    paths.forEach((path, i) => verifyInclusion(path!.leafIndex, n, leafHashes[i]!, path!.path, root));
    const v1 = performance.now();

    return {
      records: n,
      process: { ms: child.ms, cpuMs: child.cpuMs, rssStartMiB: child.rssStartMiB, rssPeakMiB: child.rssPeakMiB },
      inProcess: {
        ms: inProcessMs,
        rssBeforeMiB: mib(rssBefore),
        rssAfterMiB: mib(rssAfter),
        processPeakMiB: mib(processPeak),
      },
      identical: child.sealHash === first.seal_hash && child.records === n,
      proofMicros: ((p1 - p0) * 1000) / picked.length,
      verifyMicros: ((v1 - v0) * 1000) / picked.length,
      samples: picked.length,
    };
  });
}
