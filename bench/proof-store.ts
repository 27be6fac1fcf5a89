// Proof-store figures on the SQLite store (a WAL file under the OS temp dir, as a worker keeps it): appends per
// second, sealing a large epoch, and proof generation and verification in it. Prints nothing itself.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { generateKeyPair, signMessage } from '../core/identity.js';
import { verifyInclusion } from '../core/merkle/inclusion.js';
import { hexToBytes } from '../core/hex.js';
import { recordLeaf } from '../core/proof-record.js';
import { GENESIS_PREV_HASH, type ProofRecord } from '../core/proof-types.js';
import { createSealOverPackedLeaves } from '../core/seal.js';
import type { NewRecord, ProofStore } from '../store/proof-store.js';
import { openSqlite, type SqliteDatabase } from '../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../store/sqlite/proof-store.js';

const CELL = '891e8052a3bffff';
const EPOCH = 5;

async function withStore<T>(run: (store: ProofStore, db: SqliteDatabase) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'geofabric-bench-proofs-'));
  const db = openSqlite(join(dir, 'proofs.db'));
  try {
    return await run(createSqliteProofStore(db), db);
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
function unsignedBatch(pk: string, from: number, n: number): ProofRecord[] {
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
  readMs: number;
  /** Tree levels above the packed leaves and the seal's signature (createSealOverPackedLeaves). */
  buildMs: number;
  storeMs: number;
  totalMs: number;
  /** Resident memory after each phase and the process peak (MiB). */
  rssMiB: { beforeSeal: number; afterRead: number; afterBuild: number; afterStore: number; peak: number };
  /** Proof generation (sealedPath from stored pages) and verification, averaged over `samples` records. */
  proofMicros: number;
  verifyMicros: number;
  samples: number;
}

const mib = (bytes: number) => Math.round(bytes / 2 ** 20);

/**
 * Seals one epoch of `n` records the way the auto-sealer does (epochLeafHashes → createSealOverPackedLeaves → putSeal),
 * then times inclusion proofs in it. The records are inserted first, outside the timings.
 */
export async function benchSeal(n = 1_000_000, samples = 2000): Promise<SealFigures> {
  return withStore(async (store) => {
    const signer = generateKeyPair();
    for (let from = 0; from < n; from += 5000) {
      await store.ingestRecords(unsignedBatch(signer.publicKey, from, Math.min(5000, n - from)));
    }
    const beforeSeal = process.memoryUsage().rss;

    const t0 = performance.now();
    const leaves = await store.epochLeafHashes(signer.publicKey, EPOCH);
    const t1 = performance.now();
    const afterRead = process.memoryUsage().rss;
    const { seal, levels } = createSealOverPackedLeaves(signer.secretKey, {
      epoch: EPOCH,
      leaves,
      prevSealHash: GENESIS_PREV_HASH,
      sealedAt: '2026-01-01T06:01:00.000Z',
    });
    const t2 = performance.now();
    const afterBuild = process.memoryUsage().rss;
    await store.putSeal(seal, levels);
    const t3 = performance.now();
    const afterStore = process.memoryUsage().rss;

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
      readMs: t1 - t0,
      buildMs: t2 - t1,
      storeMs: t3 - t2,
      totalMs: t3 - t0,
      rssMiB: {
        beforeSeal: mib(beforeSeal),
        afterRead: mib(afterRead),
        afterBuild: mib(afterBuild),
        afterStore: mib(afterStore),
        peak: Math.round(process.resourceUsage().maxRSS / 1024),
      },
      proofMicros: ((p1 - p0) * 1000) / picked.length,
      verifyMicros: ((v1 - v0) * 1000) / picked.length,
      samples: picked.length,
    };
  });
}
