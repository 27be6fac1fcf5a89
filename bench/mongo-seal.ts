// The MongoDB adapter's seal (store/mongo/proof-store.ts sealEpoch, the central store's): one writer's epoch of n
// records sealed by a sealer process of its own (bench/mongo-seal-process.ts), its time and peak RSS in the shape
// of the SQLite figure (bench/proof-store.ts benchSeal). The store is a FerretDB started for the run by
// scripts/engines.sh (its own state file, stopped and deleted afterwards), or the server MONGODB_URI names (a
// database of the run's own, dropped afterwards). Prints nothing itself.
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { MongoClient } from 'mongodb';
import { readProof } from '../activities/proof/proof-ingest.js';
import { bytesToHex } from '../core/hex.js';
import { generateKeyPair } from '../core/identity.js';
import { createMerkleTreeBuilder } from '../core/merkle/tree-builder.js';
import { verifyProofBundle } from '../core/proof-bundle.js';
import { signRecord } from '../core/proof-record.js';
import type { ProofRecord, UnsignedProofRecord } from '../core/proof-types.js';
import { createMongoProofStore, recordDocument, type RecordDoc } from '../store/mongo/proof-store.js';
import { SEAL_PAGE_NODES } from '../store/seal-tree-pages.js';
import { startEnginePair } from './engine-pair.js';
import { sealInChildProcess } from './proof-store.js';
import type { MongoSealProcessJob } from './mongo-seal-process.js';

const CELL = '891e8052a3bffff';
const EPOCH = 5;
const SEALED_AT = '2026-01-01T06:01:00.000Z';
/** Documents per insertMany while filling (unordered; the driver splits a batch at its message limit). */
const FILL_BATCH = 10_000;
/**
 * Records that are really hashed and signed, spread over the epoch (first and last among them): their proofs are
 * read. Few, because FerretDB v1 finds a record by id with a scan of the collection (seconds at 10^5 records).
 */
const PROOF_SAMPLES = 8;

export interface MongoSealFigures {
  records: number;
  /** Where the store ran: the FerretDB of scripts/engines.sh, or MONGODB_URI's server. */
  engine: string;
  /** Filling the epoch (insertMany straight into `records`, outside the seal's figures). */
  fill: { ms: number; perSecond: number };
  /** The seal in the sealer process (what an operator runs), as SealFigures.process. */
  process: { ms: number; cpuMs: number; rssStartMiB: number; rssPeakMiB: number };
  /** The engine process's own peak RSS (VmHWM) over the run, when it is ours; null otherwise. */
  engineRssPeakMiB: number | null;
  /** Inclusion proofs of the sampled records (sealedPath and the bundle's verification, as readProof), mean. */
  proofMicros: number;
  proofs: number;
}

interface Engine {
  uri: string;
  dbName: string;
  label: string;
  /** Peak RSS of the engine process so far (MiB), when it is ours. */
  peakRssMiB(): number | null;
  /** Drops the run's database or stops the engine; closes the client either way. */
  stop(client: MongoClient | undefined): Promise<void>;
}

/** A FerretDB of our own (bench/engine-pair.ts), or MONGODB_URI's server. */
function startEngine(): Engine {
  const dbName = `geofabric_bench_seal_${randomUUID().slice(0, 8)}`;
  const given = process.env.MONGODB_URI;
  if (given) {
    return {
      uri: given,
      dbName,
      label: 'the MONGODB_URI server',
      peakRssMiB: () => null,
      stop: async (client) => {
        try {
          await client?.db(dbName).dropDatabase();
        } finally {
          await client?.close();
        }
      },
    };
  }
  // FerretDB v1 sorts a find's documents in memory (the whole epoch for a seal): a Go heap left to double its
  // live size takes GBs of a shared machine at 10^6 records; a soft limit makes its collector work harder instead.
  const pair = startEnginePair({ GOMEMLIMIT: '2GiB' });
  const pid = pair.value('FERRETDB_PID');
  return {
    uri: pair.value('MONGODB_URI')!,
    dbName,
    label: 'FerretDB v1 on SQLite (scripts/engines.sh)',
    peakRssMiB: () => {
      const kib = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
      return kib === undefined ? null : Math.round(Number(kib) / 1024);
    },
    stop: async (client) => {
      try {
        await client?.close();
      } finally {
        pair.stop();
      }
    },
  };
}

/**
 * Fills one writer's epoch with `n` records, seals it in a sealer process of its own and checks the seal: it
 * covers n records, its root is the one the bench computed from the hashes it wrote, and the inclusion proofs of
 * the sampled records verify. Throws when a check fails, so a wrong tree never yields figures.
 */
export async function benchMongoSeal(n = 100_000, progress = (_line: string) => {}): Promise<MongoSealFigures> {
  if (!Number.isSafeInteger(n) || n < PROOF_SAMPLES)
    throw new RangeError(`at least ${PROOF_SAMPLES} records, got ${n}`);
  const engine = startEngine();
  let client: MongoClient | undefined;
  try {
    client = await new MongoClient(engine.uri).connect();
    const db = client.db(engine.dbName);
    // The adapter's indexes exist before the records arrive, as in production.
    const store = await createMongoProofStore(db);
    const signer = generateKeyPair();
    const pk = signer.publicKey;

    // The records go straight into `records` in the documents the adapter stores (recordDocument), not through
    // appendRecords: a seal reads only seq and record_hash (and counts by address.pk and address.epoch), so
    // hashing and signing ten million records would only slow the fill. The sampled ones are real signed records,
    // whose proofs are read at the end; the rest carry random hashes and a placeholder signature.
    const sampled = new Map<number, ProofRecord | null>(
      Array.from({ length: PROOF_SAMPLES }, (_, i) => [Math.round((i * (n - 1)) / (PROOF_SAMPLES - 1)), null]),
    );
    const placeholder = 'cd'.repeat(64);
    const root = createMerkleTreeBuilder(SEAL_PAGE_NODES, () => {}); // the expected root, from what is written
    const records = db.collection<RecordDoc>('records');
    const fillStart = performance.now();
    let pending: Promise<unknown> = Promise.resolve();
    let report = n / 10;
    for (let from = 0; from < n; from += FILL_BATCH) {
      const size = Math.min(FILL_BATCH, n - from);
      const hashes = randomBytes(32 * size);
      const docs: RecordDoc[] = [];
      for (let i = 0; i < size; i++) {
        const index = from + i;
        const unsigned: UnsignedProofRecord = {
          version: 1,
          id: `job-${index}:step-a`,
          address: { h3_cell: CELL, epoch: EPOCH, pk },
          collection_type: 'inference',
          payload_type: 'hive/inference',
          payload: { model: 'tinyllama', provider: 'worker', tokens_in: 12, tokens_out: 40, latency_ms: 812 },
          seq: index + 1,
          written_at: '2026-01-01T05:00:01.000Z',
        };
        const record: ProofRecord = sampled.has(index)
          ? signRecord(signer.secretKey, unsigned)
          : { ...unsigned, record_hash: hashes.toString('hex', i * 32, i * 32 + 32), signature: placeholder };
        if (sampled.has(index)) sampled.set(index, record);
        root.addRecordHashHex(record.record_hash);
        docs.push(recordDocument(record));
      }
      await pending; // one insert in flight while the next batch is built
      pending = records.insertMany(docs, { ordered: false });
      if (from + size >= report) {
        progress(`filled ${(from + size).toLocaleString('en-US')} of ${n.toLocaleString('en-US')} records`);
        report += n / 10;
      }
    }
    await pending;
    const fillMs = performance.now() - fillStart;
    const expectedRoot = bytesToHex(root.finish());

    const child = await sealInChildProcess<MongoSealProcessJob>(
      { uri: engine.uri, dbName: engine.dbName, secretKey: signer.secretKey, epoch: EPOCH, sealedAt: SEALED_AT },
      './mongo-seal-process.ts',
    );

    const seal = await store.getSeal(pk, EPOCH);
    const problems: string[] = [];
    if (seal === null) problems.push('no seal stored');
    else {
      if (seal.record_count !== n || child.records !== n) {
        problems.push(`the seal covers ${seal.record_count} records (sealer said ${child.records}), not ${n}`);
      }
      if (seal.merkle_root !== expectedRoot) problems.push(`root ${seal.merkle_root}, expected ${expectedRoot}`);
      if (seal.seal_hash !== child.sealHash) problems.push('the stored seal is not the one the sealer made');
    }
    // Each sampled record's proof as readProof builds it (GET /store/proof) from the record the bench wrote, and
    // one read by id end to end, so the stored record is the one proven.
    let proofMs = 0;
    for (const [index, record] of sampled) {
      const start = performance.now();
      const sealedPath = await store.sealedPath(record!);
      const verified =
        sealedPath !== null &&
        verifyProofBundle({
          record,
          seal: sealedPath.seal,
          proof: {
            leaf_index: sealedPath.leafIndex,
            tree_size: sealedPath.seal.record_count,
            hashes: sealedPath.path.map(bytesToHex),
          },
        }).verified;
      proofMs += performance.now() - start;
      if (!verified) problems.push(`the proof of record ${index} does not verify`);
    }
    const middle = [...sampled.keys()][PROOF_SAMPLES >> 1]!;
    const read = await readProof(store, `job-${middle}:step-a`);
    if (!read?.verified || read.record.record_hash !== sampled.get(middle)!.record_hash) {
      problems.push(`GET /store/proof's read of record ${middle} does not verify`);
    }
    if (problems.length > 0) throw new Error(`MongoDB seal of ${n} records is wrong: ${problems.join('; ')}`);

    const engineRssPeakMiB = engine.peakRssMiB();
    await store.close();
    return {
      records: n,
      engine: engine.label,
      fill: { ms: fillMs, perSecond: n / (fillMs / 1000) },
      process: { ms: child.ms, cpuMs: child.cpuMs, rssStartMiB: child.rssStartMiB, rssPeakMiB: child.rssPeakMiB },
      engineRssPeakMiB,
      proofMicros: (proofMs * 1000) / sampled.size,
      proofs: sampled.size,
    };
  } finally {
    await engine.stop(client);
  }
}
