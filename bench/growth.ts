// `npm run bench -- --growth`: how each cost moves with history (docs/benchmarks.md "Cost curves"). For each size
// n (BENCH_GROWTH_SIZES, default 10000,100000,1000000) it builds a fresh SQLite store of n items and measures one
// operation against it; then fits each figure to constant, log or linear growth. Prints, asserts nothing.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { cellToChildren } from 'h3-js';
import { createTelemetryActivities, storeTelemetrySource } from '../activities/telemetry/index.js';
import { DEFAULT_EPOCH_GENESIS_MS } from '../core/epoch.js';
import { generateKeyPair, type KeyPair } from '../core/identity.js';
import { hexToBytes } from '../core/hex.js';
import { verifyInclusion } from '../core/merkle/inclusion.js';
import { recordLeaf } from '../core/proof-record.js';
import { GENESIS_PREV_HASH, type ProofRecord, type Seal } from '../core/proof-types.js';
import { checkSeal, checkSealChain, createSealOverTree } from '../core/seal.js';
import { fuseReadings, fusionCells, type FusionReading } from '../core/sensor-fusion.js';
import { EMPTY_ROOT } from '../core/merkle/tree.js';
import type { TelemetryPayload } from '../core/telemetry.js';
import type { NewRecord } from '../store/proof-store.js';
import { createSqliteJobStore } from '../store/sqlite/job-store.js';
import { createSqliteRateLimitStore } from '../store/sqlite/rate-limit-store.js';
import { runningJob } from '../test/store/job-store.contract.js';
import { signedReading } from '../test/helpers/telemetry.js';
import { benchReport } from './audit.js';
import { sealInChildProcess, unsignedBatch, withStore } from './proof-store.js';

const HOUR = 3_600_000;
const SEAL_EPOCH = 5;
const SEALED_AT = '2026-01-01T06:01:00.000Z';
const FUSION_EPOCHS = 168;
const JOB_CELL = '861e8050fffffff';
/** Sizes from which the store-size figures are taken, and up to which the chain-length ones are (time on 2 cores). */
const STORE_MIN = Number(process.env.BENCH_GROWTH_STORE_MIN ?? 10_000);
const FUSION_MAX = Number(process.env.BENCH_GROWTH_FUSION_MAX ?? 100_000);
const CHAIN_MAX = Number(process.env.BENCH_GROWTH_CHAIN_MAX ?? 100_000);

export interface GrowthRow {
  n: number;
  appendPerSecond: number | null;
  seal: { ms: number; cpuMs: number; rssPeakMiB: number } | null;
  inclusionMicros: number | null;
  report: { coldMs: number; warmMs: number } | null;
  fusion: { ms: number; readings: number } | { refused: string } | null;
  telemetryIngestPerSecond: number;
  telemetryPage: { firstMs: number; deepMs: number; deepPage: number };
  recentPage: { firstMs: number; deepMs: number; deepPage: number } | null;
  receipt: { chainBytes: number; verifyMs: number } | null;
}

const mean = async (times: number, fn: () => Promise<unknown> | unknown): Promise<number> => {
  await fn();
  const start = performance.now();
  for (let i = 0; i < times; i++) await fn();
  return (performance.now() - start) / times;
};

/** appendRecords (hash + sign + insert, batches of 1,000) into a store already holding n records. */
async function appendAt(n: number): Promise<number> {
  return withStore(async (store) => {
    const other = generateKeyPair().publicKey;
    for (let from = 0; from < n; from += 5000)
      await store.ingestRecords(unsignedBatch(other, from, Math.min(5000, n - from)));
    const signer = generateKeyPair();
    const entry = (i: number): NewRecord => ({
      id: `growth-${i}:step-a`,
      h3_cell: '891e8052a3bffff',
      epoch: SEAL_EPOCH + 1,
      collection_type: 'inference',
      payload_type: 'hive/inference',
      payload: { model: 'tinyllama', provider: 'worker', tokens_in: 12, tokens_out: 40, latency_ms: 812 },
      written_at: '2026-01-01T06:00:01.000Z',
    });
    const records = 10_000;
    const start = performance.now();
    for (let from = 0; from < records; from += 1000) {
      await store.appendRecords(
        signer,
        Array.from({ length: 1000 }, (_, i) => entry(from + i)),
      );
    }
    return records / ((performance.now() - start) / 1000);
  });
}

/** An epoch of n records sealed in a sealer process of its own, then inclusion proofs in it (generate + verify). */
async function sealAt(n: number): Promise<{ seal: NonNullable<GrowthRow['seal']>; inclusionMicros: number }> {
  return withStore(async (store, _db, path) => {
    const signer = generateKeyPair();
    for (let from = 0; from < n; from += 5000) {
      await store.ingestRecords(unsignedBatch(signer.publicKey, from, Math.min(5000, n - from)));
    }
    const child = await sealInChildProcess({
      path,
      secretKey: signer.secretKey,
      epoch: SEAL_EPOCH,
      sealedAt: SEALED_AT,
    });
    const seal = (await store.getSeal(signer.publicKey, SEAL_EPOCH))!;
    const root = hexToBytes(seal.merkle_root);
    const picked: ProofRecord[] = [];
    for (let i = 0; i < 500; i++) picked.push((await store.getRecord(`job-${Math.floor((i * n) / 500)}:step-a`))!);
    const start = performance.now();
    for (const record of picked) {
      const path = (await store.sealedPath(record))!;
      verifyInclusion(path.leafIndex, n, recordLeaf(record), path.path, root); // throws on a bad proof
    }
    return {
      seal: { ms: child.ms, cpuMs: child.cpuMs, rssPeakMiB: child.rssPeakMiB },
      inclusionMicros: ((performance.now() - start) * 1000) / picked.length,
    };
  });
}

/**
 * n signed readings over the 19 cells of a fusion (2 rings) × 168 epochs, ingested as POST /v1/telemetry does
 * (activities/telemetry ingest: device signature checks, rate window, node-signed records; batches of 100, the
 * protocol's most). Then: the ingest rate over the last tenth, the fusion's reads and fuse over the whole window,
 * and GET /v1/telemetry's page 1 against a deep page (100 readings a page).
 */
async function telemetryAt(
  n: number,
): Promise<Pick<GrowthRow, 'fusion' | 'telemetryIngestPerSecond' | 'telemetryPage'>> {
  return withStore(async (store, db) => {
    const genesisMs = DEFAULT_EPOCH_GENESIS_MS;
    const firstEpoch = 1000;
    let now = genesisMs + firstEpoch * HOUR;
    const node = generateKeyPair();
    const telemetry = createTelemetryActivities({
      store,
      signer: node,
      clock: () => now,
      genesisMs,
      epochMs: HOUR,
      rateLimits: createSqliteRateLimitStore(db),
      readingsPerHour: 1e9,
    });
    const cells = fusionCells(JOB_CELL, 2);
    // One device in a resolution-9 cell under each fusion cell.
    const devices: { key: KeyPair; cell: string }[] = cells.map((cell) => ({
      key: generateKeyPair(),
      cell: cellToChildren(cell, 9)[0]!,
    }));
    // The bulk goes straight to the store (records as ingest writes them): node-signed through appendRecords when
    // the fusion is measured (its reads check every record), else inserted as already signed (the fusion is not
    // read then). The last TAIL readings go through ingest itself, for its rate at n stored.
    const TAIL = Math.min(2000, Math.floor(n / 10));
    const bulk = n - TAIL;
    const signedBulk = n <= FUSION_MAX;
    const perCellEpoch = Math.max(1, Math.ceil(bulk / (cells.length * FUSION_EPOCHS)));
    const payloadOf = (device: { key: KeyPair; cell: string }, value: number, observedAt: string) => ({
      device_pk: device.key.publicKey,
      h3_cell: device.cell,
      quantity: 'pm2_5',
      value,
      unit: 'ug/m3',
      observed_at: observedAt,
      device_signature: 'ab'.repeat(64),
      principal_pk: device.key.publicKey,
    });
    let written = 0;
    let seq = 0;
    for (let e = 0; e < FUSION_EPOCHS && written < bulk; e++) {
      const epoch = firstEpoch + e;
      const epochStart = genesisMs + epoch * HOUR;
      for (const device of devices) {
        const count = Math.min(perCellEpoch, bulk - written);
        if (count <= 0) break;
        const at = (i: number) => new Date(epochStart + Math.floor((i * HOUR) / (perCellEpoch + 1))).toISOString();
        const id = (i: number) => `telemetry:${device.key.publicKey}:pm2_5:${at(i)}`;
        const writtenAt = new Date(epochStart + HOUR - 1).toISOString();
        if (signedBulk) {
          for (let from = 0; from < count; from += 1000) {
            await store.appendRecords(
              node,
              Array.from({ length: Math.min(1000, count - from) }, (_, j) => {
                const i = from + j;
                return {
                  id: id(i),
                  h3_cell: device.cell,
                  epoch,
                  collection_type: 'telemetry' as const,
                  payload_type: 'iot/telemetry' as const,
                  payload: payloadOf(device, 10 + ((i * 7 + e) % 13), at(i)),
                  written_at: writtenAt,
                };
              }),
            );
          }
        } else {
          const records = Array.from({ length: count }, (_, i) => ({
            version: 1 as const,
            id: id(i),
            address: { h3_cell: device.cell, epoch, pk: node.publicKey },
            collection_type: 'telemetry' as const,
            payload_type: 'iot/telemetry' as const,
            payload: payloadOf(device, 10 + ((i * 7 + e) % 13), at(i)),
            seq: ++seq,
            written_at: writtenAt,
            record_hash: randomBytes(32).toString('hex'),
            signature: 'cd'.repeat(64),
          }));
          for (let from = 0; from < count; from += 5000) await store.ingestRecords(records.slice(from, from + 5000));
        }
        written += count;
      }
    }
    // The tail: readings of the window's next epoch, through ingest, in batches of 100 (the protocol's most).
    const tailEpochStart = genesisMs + (firstEpoch + FUSION_EPOCHS) * HOUR;
    now = tailEpochStart + HOUR - 1;
    const tail = Array.from({ length: TAIL }, (_, i) => {
      const device = devices[i % devices.length]!;
      return {
        device,
        reading: signedReading(device.key, device.cell, {
          quantity: 'pm2_5',
          value: 10 + (i % 13),
          unit: 'ug/m3',
          observed_at: new Date(tailEpochStart + i * 1000).toISOString(),
        }),
      };
    });
    const tailStart = performance.now();
    for (let d = 0; d < devices.length; d++) {
      const mine = tail.filter((t) => t.device === devices[d]).map((t) => t.reading);
      for (let from = 0; from < mine.length; from += 100) {
        const result = await telemetry.ingest({
          devicePk: devices[d]!.key.publicKey,
          cell: devices[d]!.cell,
          readings: mine.slice(from, from + 100),
          principalPk: devices[d]!.key.publicKey,
        });
        if (result.refused.length > 0) throw new Error(`reading refused: ${JSON.stringify(result.refused[0])}`);
      }
    }
    const telemetryIngestPerSecond = TAIL / ((performance.now() - tailStart) / 1000);

    const source = storeTelemetrySource(store, [node.publicKey]);
    let fusion: GrowthRow['fusion'] = null;
    if (signedBulk)
      try {
        const start = performance.now();
        const readings: FusionReading[] = [];
        for (const cell of cells) {
          for (const record of await source(cell, firstEpoch, firstEpoch + FUSION_EPOCHS - 1)) {
            const payload = record.payload as unknown as TelemetryPayload;
            readings.push({
              device_pk: payload.device_pk,
              principal_pk: payload.principal_pk,
              value: payload.value,
              record_id: record.id,
              record_hash: record.record_hash,
            });
          }
        }
        fuseReadings(readings);
        fusion = { ms: performance.now() - start, readings: readings.length };
      } catch (error) {
        fusion = { refused: (error as Error).message };
      }

    // GET /v1/telemetry over the parent cell: page 1, then the page the 999th cursor reaches (or the last).
    const query = { cell: JOB_CELL, limit: 100 };
    const firstMs = await mean(20, () => telemetry.list(query));
    let cursor: string | null = null;
    let deepPage = 1;
    for (let page = 1; page < 1000; page++) {
      const next: string | null = (await telemetry.list({ ...query, ...(cursor === null ? {} : { cursor }) }))
        .nextCursor;
      if (next === null) break;
      cursor = next;
      deepPage = page + 1;
    }
    const deepMs = await mean(20, () => telemetry.list({ ...query, ...(cursor === null ? {} : { cursor }) }));
    return { fusion, telemetryIngestPerSecond, telemetryPage: { firstMs, deepMs, deepPage } };
  });
}

/** GET /v1/compute/recent's store read with n jobs: page 1 against the page 999 cursors deep (100 jobs a page). */
async function recentAt(n: number): Promise<NonNullable<GrowthRow['recentPage']>> {
  return withStore(async (_store, db) => {
    const jobs = createSqliteJobStore(db);
    const insertAll = db.transaction((from: number, to: number) => {
      const t0 = Date.UTC(2026, 2, 1);
      const insert = db.prepare(
        'INSERT INTO compute_jobs (job_id, record_version, status, created_at, updated_at, json) VALUES (?, 1, ?, ?, ?, ?)',
      );
      for (let i = from; i < to; i++) {
        const at = new Date(t0 + i * 1000).toISOString();
        const job = runningJob({ job_id: `job-${String(i).padStart(9, '0')}`, created_at: at, updated_at: at });
        insert.run(job.job_id, job.status, at, at, JSON.stringify(job));
      }
    });
    for (let from = 0; from < n; from += 50_000) insertAll(from, Math.min(n, from + 50_000));
    const firstMs = await mean(20, () => jobs.recent(100));
    // `before` of the deepest full page within 1,000 (a page past the last job would be empty and cost nothing).
    let before: { createdAt: string; jobId: string } | undefined;
    let deepPage = 1;
    for (let page = 1; page < 1000; page++) {
      const found = await jobs.recent(100, before === undefined ? {} : { before });
      const last = found[found.length - 1];
      if (found.length < 100 || last === undefined) break;
      const next = { createdAt: last.created_at, jobId: last.job_id };
      if ((await jobs.recent(100, { before: next })).length < 100) break;
      before = next;
      deepPage = page + 1;
    }
    const deepMs = await mean(20, () => jobs.recent(100, before === undefined ? {} : { before }));
    return { firstMs, deepMs, deepPage };
  });
}

/**
 * The part of a receipt that grows with history: a sealer's seal chain from its first seal (core/receipt.ts as it
 * is, every seal since the first), here of n hourly seals: its JSON bytes and the receipt's checks on it (each
 * seal's own check, then the chain's links).
 */
function receiptChainAt(n: number): NonNullable<GrowthRow['receipt']> {
  const sealer = generateKeyPair();
  const seals: Seal[] = [];
  let prev = GENESIS_PREV_HASH;
  for (let epoch = 0; epoch < n; epoch++) {
    const seal = createSealOverTree(sealer.secretKey, {
      epoch,
      tree: { count: 0, firstSeq: null, root: EMPTY_ROOT },
      prevSealHash: prev,
      sealedAt: new Date(DEFAULT_EPOCH_GENESIS_MS + (epoch + 1) * HOUR + 60_000).toISOString(),
    });
    seals.push(seal);
    prev = seal.seal_hash;
  }
  const chainBytes = Buffer.byteLength(JSON.stringify({ sealer_pk: sealer.publicKey, seals }));
  const start = performance.now();
  const parsed = JSON.parse(JSON.stringify(seals)) as unknown[];
  for (const seal of parsed) if (!checkSeal(seal).ok) throw new Error('seal refused');
  if (checkSealChain(parsed as Seal[]).length > 0) throw new Error('chain refused');
  return { chainBytes, verifyMs: performance.now() - start };
}

export async function growthRow(n: number, log: (line: string) => void): Promise<GrowthRow> {
  const store = n >= STORE_MIN;
  const chain = n <= CHAIN_MAX;
  const appendPerSecond = store ? await appendAt(n) : null;
  const sealed = store ? await sealAt(n) : null;
  if (sealed) {
    log(
      `  append ${Math.round(appendPerSecond!)} records/s; seal ${(sealed.seal.ms / 1000).toFixed(2)} s, RSS peak ${sealed.seal.rssPeakMiB} MiB`,
    );
  }
  const report = chain ? await benchReport(n) : null;
  if (report) log(`  compliance report cold ${report.coldMs.toFixed(0)} ms, warm ${report.warmMs.toFixed(0)} ms`);
  const tele = await telemetryAt(n);
  log(
    `  telemetry ingest ${Math.round(tele.telemetryIngestPerSecond)} readings/s; fusion ${JSON.stringify(tele.fusion)}`,
  );
  const recentPage = store ? await recentAt(n) : null;
  const receipt = chain ? receiptChainAt(n) : null;
  return {
    n,
    appendPerSecond,
    seal: sealed?.seal ?? null,
    inclusionMicros: sealed?.inclusionMicros ?? null,
    report: report && { coldMs: report.coldMs, warmMs: report.warmMs },
    ...tele,
    recentPage,
    receipt,
  };
}

export type Growth = 'constant' | 'log' | 'linear';

/**
 * The growth that best fits y(n): least squares of y = a + b·f(n) for f = 1, log n, n, judged by the residual
 * relative to the mean. Three points cannot tell much, so a figure that moves by less than 1.5× over the whole
 * range counts as constant (timer noise on a shared machine is that large).
 */
export function fitGrowth(ns: readonly number[], ys: readonly number[]): Growth {
  const max = Math.max(...ys);
  const min = Math.min(...ys);
  if (min > 0 && max / min < 1.5) return 'constant';
  const fit = (f: (n: number) => number) => {
    const xs = ns.map(f);
    const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
    const my = ys.reduce((a, b) => a + b, 0) / ys.length;
    const sxx = xs.reduce((s, x) => s + (x - mx) ** 2, 0);
    const b = sxx === 0 ? 0 : xs.reduce((s, x, i) => s + (x - mx) * (ys[i]! - my), 0) / sxx;
    const a = my - b * mx;
    return xs.reduce((s, x, i) => s + (ys[i]! - (a + b * x)) ** 2, 0);
  };
  const errors: [Growth, number][] = [
    ['constant', fit(() => 1)],
    ['log', fit(Math.log)],
    ['linear', fit((n) => n)],
  ];
  errors.sort((a, b) => a[1] - b[1]);
  return errors[0]![0];
}

const fmt = (v: number, digits = 0) => v.toLocaleString('en-US', { maximumFractionDigits: digits });

/** The growth table (Markdown): one line per figure, one column per n, and the fitted growth. */
export function growthTable(rows: readonly GrowthRow[]): string {
  const ns = rows.map((r) => r.n);
  const line = (name: string, unit: string, get: (r: GrowthRow) => number | null, digits = 0, note = '') => {
    const values = rows.map(get);
    const known = values
      .map((v, i) => [ns[i]!, v] as const)
      .filter((p): p is readonly [number, number] => p[1] !== null);
    const growth =
      known.length >= 2
        ? fitGrowth(
            known.map((p) => p[0]),
            known.map((p) => p[1]),
          )
        : '—';
    const cells = values.map((v) => (v === null ? '—' : `${fmt(v, digits)} ${unit}`));
    return `| ${name} | ${cells.join(' | ')} | ${growth}${note ? ` (${note})` : ''} |`;
  };
  return [
    `| figure | ${ns.map((n) => `n = ${fmt(n)}`).join(' | ')} | growth |`,
    `|---|${ns.map(() => '---').join('|')}|---|`,
    line('proof append into a store of n records', '/s', (r) => r.appendPerSecond),
    line('seal of an n-record epoch (own process)', 's', (r) => (r.seal ? r.seal.ms / 1000 : null), 2),
    line('seal CPU', 's', (r) => (r.seal ? r.seal.cpuMs / 1000 : null), 2),
    line('seal RSS peak', 'MiB', (r) => r.seal?.rssPeakMiB ?? null),
    line('inclusion proof (read path + verify)', 'µs', (r) => r.inclusionMicros),
    line('compliance report of an n-block chain, cold', 'ms', (r) => r.report?.coldMs ?? null),
    line('compliance report, warm', 'ms', (r) => r.report?.warmMs ?? null),
    line(
      'fusion, 19 cells × 168 epochs of n readings',
      'ms',
      (r) => (r.fusion && 'ms' in r.fusion ? r.fusion.ms : null),
      0,
      'refused past 100,000 readings',
    ),
    line('telemetry ingest (batches of 100) at n stored', '/s', (r) => r.telemetryIngestPerSecond),
    line('GET /v1/telemetry page 1', 'ms', (r) => r.telemetryPage.firstMs, 2),
    line('GET /v1/telemetry deep page', 'ms', (r) => r.telemetryPage.deepMs, 2),
    line('/v1/compute/recent page 1 (store read)', 'ms', (r) => r.recentPage?.firstMs ?? null, 2),
    line('/v1/compute/recent page 1,000 (store read)', 'ms', (r) => r.recentPage?.deepMs ?? null, 2),
    line('receipt seal chain of n hourly seals', 'KiB', (r) => (r.receipt ? r.receipt.chainBytes / 1024 : null)),
    line('receipt seal-chain verify', 'ms', (r) => r.receipt?.verifyMs ?? null, 1),
  ].join('\n');
}

export async function runGrowth(): Promise<GrowthRow[]> {
  const sizes = (process.env.BENCH_GROWTH_SIZES ?? '1000,10000,100000,1000000').split(',').map(Number);
  const rows: GrowthRow[] = [];
  for (const n of sizes) {
    console.log(`growth: n = ${n.toLocaleString('en-US')}`);
    rows.push(await growthRow(n, console.log));
  }
  console.log('');
  console.log(
    rows
      .map(
        (r) =>
          `n=${r.n}: telemetry deep page = page ${r.telemetryPage.deepPage}, recent deep page = page ${r.recentPage?.deepPage ?? '—'}; ` +
          `fusion ${r.fusion === null ? 'not run' : 'ms' in r.fusion ? `${r.fusion.readings} readings` : `refused: ${r.fusion.refused}`}`,
      )
      .join('\n'),
  );
  console.log(`\n${growthTable(rows)}`);
  return rows;
}
