// Per-unit costs docs/capacity.md derives from (`npx tsx bench/capacity-units.ts`): stored bytes per proof record
// (an inference record and a telemetry record, with indexes and seal pages), and the worker registry's costs with
// 10,000 workers (list, heartbeat, recordOutcome) on the SQLite adapter. Prints, asserts nothing.
import { performance } from 'node:perf_hooks';
import { cellToChildren } from 'h3-js';
import { generateKeyPair } from '../core/identity.js';
import { GENESIS_PREV_HASH } from '../core/proof-types.js';
import { createSealOverTree } from '../core/seal.js';
import type { NewRecord } from '../store/proof-store.js';
import { openSqlite } from '../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../store/sqlite/proof-store.js';
import { createSqliteWorkerRegistry } from '../store/sqlite/worker-registry.js';
import { registration } from '../test/store/worker-registry.contract.js';

const N = 20_000;
const dbBytes = (db: ReturnType<typeof openSqlite>) =>
  (db.pragma('page_count', { simple: true }) as number) * (db.pragma('page_size', { simple: true }) as number);

async function bytesPerRecord(kind: 'inference' | 'telemetry'): Promise<{ json: number; stored: number }> {
  const db = openSqlite(':memory:');
  const store = createSqliteProofStore(db);
  const signer = generateKeyPair();
  const cell = cellToChildren('861e8050fffffff', 9)[0]!;
  const entry = (i: number): NewRecord =>
    kind === 'inference'
      ? {
          id: `inference:00000000-0000-4000-8000-${String(i).padStart(12, '0')}:step-${i % 4}`,
          h3_cell: '861e8050fffffff',
          epoch: 5,
          collection_type: 'inference',
          payload_type: 'hive/inference',
          payload: {
            model: 'tinyllama',
            provider: 'worker',
            tokens_in: 120,
            tokens_out: 400,
            latency_ms: 812,
            request_hash: 'ab'.repeat(32),
            response_hash: 'cd'.repeat(32),
          },
          written_at: '2026-01-01T05:00:01.000Z',
        }
      : {
          id: `telemetry:${signer.publicKey}:pm2_5:${new Date(Date.UTC(2026, 0, 1, 5) + i * 100).toISOString()}`,
          h3_cell: cell,
          epoch: 5,
          collection_type: 'telemetry',
          payload_type: 'iot/telemetry',
          payload: {
            device_pk: signer.publicKey,
            h3_cell: cell,
            quantity: 'pm2_5',
            value: 12.5,
            unit: 'ug/m3',
            observed_at: new Date(Date.UTC(2026, 0, 1, 5) + i * 100).toISOString(),
            device_signature: 'ef'.repeat(64),
            principal_pk: signer.publicKey,
          },
          written_at: '2026-01-01T05:00:01.000Z',
        };
  const before = dbBytes(db);
  let json = 0;
  for (let from = 0; from < N; from += 1000) {
    const records = await store.appendRecords(
      signer,
      Array.from({ length: 1000 }, (_, i) => entry(from + i)),
    );
    for (const r of records) json += JSON.stringify(r).length;
  }
  await store.sealEpoch(signer.publicKey, 5, (tree) =>
    createSealOverTree(signer.secretKey, {
      epoch: 5,
      tree,
      prevSealHash: GENESIS_PREV_HASH,
      sealedAt: '2026-01-01T06:01:00.000Z',
    }),
  );
  const stored = (dbBytes(db) - before) / N;
  db.close();
  return { json: json / N, stored };
}

async function registryCosts(workers = 10_000) {
  const db = openSqlite(':memory:');
  const registry = createSqliteWorkerRegistry(db);
  const regs = Array.from({ length: workers }, () => registration());
  for (const r of regs) await registry.register(r, 1000);
  const time = async (times: number, fn: (i: number) => Promise<unknown>) => {
    const start = performance.now();
    for (let i = 0; i < times; i++) await fn(i);
    return (performance.now() - start) / times;
  };
  const listMs = await time(20, () => registry.list());
  const heartbeatMs = await time(5000, (i) =>
    registry.heartbeat(regs[i % workers]!.pk, 1 + Math.floor(i / workers), 2000 + i),
  );
  const outcomeMs = await time(5000, (i) => registry.recordOutcome(regs[i % workers]!.pk, 'completed', `job-${i}`));
  db.close();
  return { workers, listMs, heartbeatMs, outcomeMs };
}

for (const kind of ['inference', 'telemetry'] as const) {
  const b = await bytesPerRecord(kind);
  console.log(
    `${kind} record: ${b.json.toFixed(0)} B of JSON, ${b.stored.toFixed(0)} B stored in SQLite (row, indexes, seal pages)`,
  );
}
const r = await registryCosts();
console.log(
  `worker registry (SQLite), ${r.workers} workers: list() ${r.listMs.toFixed(1)} ms, heartbeat ${(r.heartbeatMs * 1000).toFixed(0)} µs, ` +
    `recordOutcome ${(r.outcomeMs * 1000).toFixed(0)} µs`,
);
