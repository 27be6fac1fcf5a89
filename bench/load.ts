/**
 * `npm run bench:load`: drives the real service, as `geofabric start` runs it, with autocannon
 * on loopback for a bounded time, then stops it gracefully and runs `geofabric store audit` over its store.
 *
 * The bench starts, in this process, a fake XYZ tile upstream and an instant fake OpenAI-compatible runtime
 * (test/helpers), and the service as a child process (temp DATA_DIR, free loopback ports, embedded
 * orchestrator, perception and governance off, the runtime as its local worker, a bench API key). After a
 * warm-up (every tile fetched once, a few jobs), four scenarios run one after another, each for
 * BENCH_LOAD_SECONDS (10) with BENCH_LOAD_CONNECTIONS (16); BENCH_LOAD_MIXED=1 adds a fifth mixing all four:
 *
 *   compute  POST /v1/compute, every body freshly signed with its own nonce (a distinct job), two parallel
 *            instant steps: inference on the fake runtime and tile_render from the warmed tile cache
 *   tiles    GET /v1/tiles/:cell/14/osm-standard.png over 50 warmed tiles: cache hits
 *   chat     POST /v1/chat/completions, non-streaming, `Authorization: Bearer` the bench key (tier pro)
 *   proofs   GET /store/proof/:id over ~1,000 records the run wrote (jobs, inference, tiles), in the current
 *            hourly epoch, unsealed, so each answers 200 `{pending: true}` (a full store read), and ~330 sealed
 *            records the worker below pushed, each answered with its Merkle inclusion proof
 *
 * While the compute scenario runs, a worker node (its own key and SQLite store) pushes BENCH_LOAD_SYNC_RECORDS
 * (5,000) records of the three hours before this one, sealed by it, through the real sync protocol (the sync
 * agent: POST /store/sync, then /store/epochs): so the audit afterwards covers sealed epochs and their chain,
 * delivered under load. The per-IP and per-principal rate limits stay on at a rate no scenario reaches, so
 * their cost is in the figures.
 *
 * Every scenario expects 200 only: the bench key is `pro` (no daily chat quota) and no delegation certificate
 * is sent (no max_ops_per_hour), so a 429, like any other non-2xx or connection error, fails the run. So do
 * error-level service logs, an unclean service exit and any problem the audit finds. Exit 0 only if all hold.
 * BENCH_LOAD_KEEP=1 keeps the temp DATA_DIR afterwards. Runtime ≈ 4 × BENCH_LOAD_SECONDS + ~10 s start, warm-up,
 * stop and audit (longer only when the run crosses the hour: see epochToSealBeforeStop).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { cellToChildren } from 'h3-js';
import { signRequestBody } from '../core/gates/signature.js';
import { createSyncAgent, type SyncRound } from '../activities/proof/sync-agent.js';
import { sealDueEpochs } from '../activities/proof/epoch-sealer.js';
import { DEFAULT_EPOCH_GENESIS_MS, epochAt, epochWindow } from '../core/epoch.js';
import { DEFAULT_JOB_CELL } from '../core/h3-cell.js';
import { generateKeyPair, type KeyPair } from '../core/identity.js';
import type { NewRecord, ProofStore } from '../store/proof-store.js';
import { openSqlite } from '../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../store/sqlite/proof-store.js';
import { TILE_STYLES } from '../core/tile-styles.js';
import { startFakeRuntime } from '../test/helpers/fake-openai-runtime.js';
import {
  epochToSealBeforeStop,
  formatAudit,
  formatComparison,
  formatScenario,
  parseAuditReport,
  processCounts,
  positiveIntSetting,
  scenarioProblems,
  summarizeLogLines,
  summarizeScenario,
  type AuditSummary,
  type ScenarioSummary,
} from './load-report.js';
import { startTileUpstream } from './load-upstream.js';

const SECONDS = positiveIntSetting('BENCH_LOAD_SECONDS', process.env.BENCH_LOAD_SECONDS, 10);
const CONNECTIONS = positiveIntSetting('BENCH_LOAD_CONNECTIONS', process.env.BENCH_LOAD_CONNECTIONS, 16);
const MIXED = process.env.BENCH_LOAD_MIXED === '1';
/** BENCH_LOAD_WEB_CONCURRENCY=1,2: one full run per gateway process count, then their scenarios side by side. */
const PROCESS_COUNTS = processCounts(process.env.BENCH_LOAD_WEB_CONCURRENCY);
/** The syncing worker node's key, configured at the service as a node key (SYNC_NODE_KEYS). */
const SYNC_KEY = generateKeyPair();
const SYNC_RECORDS = positiveIntSetting('BENCH_LOAD_SYNC_RECORDS', process.env.BENCH_LOAD_SYNC_RECORDS, 5000);
/** Limits far above any scenario's rate: the limiter runs on every request and never refuses. */
const UNREACHED_RATE_PER_MINUTE = '10000000';
const UNREACHED_BYTES_PER_MINUTE = String(100 * 2 ** 30);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TILE_ZOOM = 14;
const TILE_STYLE = 'osm-standard';
/** Seal grace and sealer tick of the service (its defaults, 60 s and 30 s): the longest wait for a seal. */
const SEAL_WAIT_MS = (60 + 30 + 30) * 1000;

const children = new Set<ChildProcess>();
let dataDir: string | undefined;
// BENCH_LOAD_KEEP=1 keeps the service's DATA_DIR (to re-run the audit by hand); a failed run always keeps it.
let keepDataDir = process.env.BENCH_LOAD_KEEP === '1';

// Whatever ends this process (an error, Ctrl-C), no service is left running on the machine.
process.on('exit', () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  if (dataDir && !keepDataDir) rmSync(dataDir, { recursive: true, force: true });
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    process.stderr.write(`\n${signal}: stopping the service and exiting\n`);
    process.exit(130);
  });
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

/** Only the basics of this shell pass through: a developer's MONGODB_URI or LEDGER must not change what is measured. */
function baseEnv(): NodeJS.ProcessEnv {
  const keep = ['PATH', 'HOME', 'TMPDIR', 'TEMP', 'TMP', 'LANG', 'LC_ALL', 'TZ', 'SystemRoot'];
  return Object.fromEntries(keep.filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]]));
}

// Same as `tsx bin/geofabric.ts …`, minus tsx's wrapper process: SIGTERM reaches the gateway's own handler.
const geofabric = (args: string[], env: NodeJS.ProcessEnv) =>
  spawn(process.execPath, ['--import', 'tsx', 'bin/geofabric.ts', ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });

interface Service {
  url: string;
  child: ChildProcess;
  logLines: string[];
  stderrTail: string[];
  /** SIGTERM, then the exit code (SIGKILL and null after 45 s). */
  stop(): Promise<{ code: number | null; ms: number }>;
}

async function startService(env: NodeJS.ProcessEnv, port: number): Promise<Service> {
  const child = geofabric(['start'], env);
  children.add(child);
  const logLines: string[] = [];
  const stderrTail: string[] = [];
  // pino writes JSON lines on stdout (warn and above at LOG_LEVEL=warn); kept for the verdict.
  createInterface({ input: child.stdout! }).on('line', (line) => logLines.push(line));
  createInterface({ input: child.stderr! }).on('line', (line) => {
    stderrTail.push(line);
    if (stderrTail.length > 40) stderrTail.shift();
  });
  // 'close' (after 'exit' and the end of stdout): every log line is in by then.
  const exited = once(child, 'close');
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) {
      throw new Error(`the service exited with ${child.exitCode} before answering /health:\n${stderrTail.join('\n')}`);
    }
    if (Date.now() > deadline) throw new Error('the service did not answer /health within 90 s');
    const ok = await fetch(`${url}/health`).then(
      (res) => res.ok,
      () => false,
    );
    if (ok) break;
    await sleep(100);
  }
  return {
    url,
    child,
    logLines,
    stderrTail,
    async stop() {
      const started = performance.now();
      child.kill('SIGTERM');
      // The service ends itself at most drain (25 s) + 15 s after SIGTERM; past that it hangs.
      const timer = setTimeout(() => child.kill('SIGKILL'), 45_000);
      const [code] = (await exited) as [number | null];
      clearTimeout(timer);
      children.delete(child);
      return { code, ms: performance.now() - started };
    },
  };
}

/** A GET on a connection of its own (never a kept-alive one); its status once the body is read. */
function getFresh(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    httpGet(url, { agent: false }, (res) => {
      res.resume().on('end', () => resolve(res.statusCode ?? 0));
    }).on('error', reject);
  });
}

async function getJson<T>(url: string, init?: RequestInit): Promise<{ status: number; body: T }> {
  const res = await fetch(url, init);
  return { status: res.status, body: (await res.json()) as T };
}

async function main(): Promise<number> {
  console.log(
    `machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}; ` +
      `${SECONDS} s per scenario, ${CONNECTIONS} connections; load generator, fake upstreams and the service share these cores`,
  );
  const runs: { processes: number; summaries: ScenarioSummary[] }[] = [];
  let failed = false;
  for (const processes of PROCESS_COUNTS) {
    if (PROCESS_COUNTS.length > 1) console.log(`\n==== WEB_CONCURRENCY=${processes} ====`);
    const run = await runOnce(processes);
    runs.push({ processes, summaries: run.summaries });
    if (run.code !== 0) failed = true;
    else if (dataDir && !keepDataDir) rmSync(dataDir, { recursive: true, force: true });
    keepDataDir = process.env.BENCH_LOAD_KEEP === '1';
  }
  if (runs.length > 1) {
    console.log(`\n${formatComparison(runs)}`);
  }
  return failed ? 1 : 0;
}

/** One service run with `processes` gateway processes (WEB_CONCURRENCY): its scenarios, stop, audit. */
async function runOnce(processes: number): Promise<{ code: number; summaries: ScenarioSummary[] }> {
  // The upstreams the service calls: both answer at once, so what is measured is Geofabric's own work.
  const runtime = await startFakeRuntime('bench', () => ({
    content: 'Villa Borghese is a park.',
    usage: { prompt_tokens: 12, completion_tokens: 6 },
  }));
  const chatCalls = { count: 0 };
  // The fake runtime logs every request; keep a count, not the bodies, over a long run.
  const trim = setInterval(() => {
    chatCalls.count += runtime.requests.length;
    runtime.requests.length = 0;
  }, 500);
  trim.unref();
  const upstream = await startTileUpstream();

  dataDir = mkdtempSync(join(tmpdir(), 'geofabric-bench-load-'));
  const apiKey = `gf_bench_${randomBytes(16).toString('hex')}`;
  const port = await freePort();
  const { template } = upstream;
  const env: NodeJS.ProcessEnv = {
    ...baseEnv(),
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: String(port),
    LOG_LEVEL: 'warn',
    ORCHESTRATOR: 'embedded',
    PERCEPTION_ENABLED: 'false',
    GOVERNANCE_ENABLED: 'false',
    API_KEYS: apiKey,
    RATE_LIMIT_IP_PER_MINUTE: UNREACHED_RATE_PER_MINUTE,
    RATE_LIMIT_PRINCIPAL_PER_MINUTE: UNREACHED_RATE_PER_MINUTE,
    // The sync push sends megabytes from one address within seconds; the default byte budget would refuse it.
    RATE_LIMIT_IP_BODY_BYTES_PER_MINUTE: UNREACHED_BYTES_PER_MINUTE,
    WORKER_RUNTIME_URL: runtime.url,
    WORKER_MODELS: 'tinyllama',
    PREWARM_MODELS: 'tinyllama',
    // The syncing worker node below pushes as a configured node key (the store takes no unknown writer).
    SYNC_NODE_KEYS: SYNC_KEY.publicKey,
    WEB_CONCURRENCY: String(processes),
    ...Object.fromEntries(TILE_STYLES.map((s) => [`TILE_URL_${s.toUpperCase().replace('-', '_')}`, template])),
  };
  const startCommand = `WEB_CONCURRENCY=${processes} DATA_DIR=${dataDir} PORT=${port} LOG_LEVEL=warn ORCHESTRATOR=embedded PERCEPTION_ENABLED=false GOVERNANCE_ENABLED=false API_KEYS=<bench key> RATE_LIMIT_IP_PER_MINUTE=${UNREACHED_RATE_PER_MINUTE} RATE_LIMIT_PRINCIPAL_PER_MINUTE=${UNREACHED_RATE_PER_MINUTE} RATE_LIMIT_IP_BODY_BYTES_PER_MINUTE=${UNREACHED_BYTES_PER_MINUTE} WORKER_RUNTIME_URL=${runtime.url} WORKER_MODELS=tinyllama PREWARM_MODELS=tinyllama SYNC_NODE_KEYS=<bench sync key> TILE_URL_<all five styles>=${template} node --import tsx bin/geofabric.ts start`;
  console.log(`service: ${startCommand}`);

  const startedAt = performance.now();
  // Before the start: the earliest moment a record of this run can carry.
  const runStartMs = Date.now();
  const service = await startService(env, port);
  console.log(`service: /health answered after ${fmt(performance.now() - startedAt)} ms at ${service.url}`);
  const { url } = service;

  // ---- warm-up ---------------------------------------------------------------------------------------------
  const tileCells = [DEFAULT_JOB_CELL, ...cellToChildren(DEFAULT_JOB_CELL, 8)];
  const tilePath = (cell: string) => `/v1/tiles/${cell}/${TILE_ZOOM}/${TILE_STYLE}.png`;
  // Each process has its own tile cache: under WEB_CONCURRENCY every tile is fetched on fresh connections, which
  // the cluster's primary hands to its workers in turn.
  // Rounds go on until `2 × processes` in a row fetched nothing upstream (every process holds every tile; the
  // later workers start listening a little after the first).
  let quiet = 0;
  let rounds = 0;
  while (processes === 1 ? rounds < 1 : quiet < 2 * processes && rounds < 20 * processes) {
    const fetched = upstream.requests();
    for (const cell of tileCells) {
      // `processes` fresh connections in a row: the primary hands them to each worker in turn.
      for (let copy = 0; copy < processes; copy++) {
        const status =
          processes === 1
            ? await fetch(`${url}${tilePath(cell)}`).then(async (res) => {
                await res.arrayBuffer();
                return res.status;
              })
            : await getFresh(`${url}${tilePath(cell)}`);
        if (status !== 200) throw new Error(`warm-up: ${tilePath(cell)} answered ${status}`);
      }
    }
    rounds += 1;
    quiet = upstream.requests() === fetched ? quiet + 1 : 0;
    if (processes > 1 && quiet === 0) await sleep(250);
  }
  const requester = generateKeyPair();
  const runId = randomUUID().slice(0, 8);
  let nonce = 0;
  // Two steps of one level, run in parallel: neither depends on the other, so the tile is not annotated.
  const signedJob = () => {
    const signed = signRequestBody(requester.secretKey, {
      h3_cell: DEFAULT_JOB_CELL,
      nonce: `${runId}-${nonce++}`,
      budget_credits: 1,
      steps: [
        {
          id: 'ask',
          type: 'inference',
          model: 'tinyllama',
          max_tokens: 64,
          messages: [{ role: 'user', content: 'one park in Rome' }],
        },
        { id: 'map', type: 'tile_render', zoom: TILE_ZOOM, style: TILE_STYLE },
      ],
    });
    return {
      body: JSON.stringify(signed.body),
      headers: { 'content-type': 'application/json', 'x-idn-signature': signed.signature },
    };
  };
  for (let i = 0; i < 5; i++) {
    const { body, headers } = signedJob();
    const res = await getJson<{
      status?: string;
      steps?: Array<{ id: string; status: string; output?: { cache?: string } }>;
    }>(`${url}/v1/compute`, { method: 'POST', body, headers });
    const map = res.body.steps?.find((s) => s.id === 'map');
    if (res.status !== 200 || res.body.status !== 'complete') {
      throw new Error(`warm-up job answered ${res.status}: ${JSON.stringify(res.body).slice(0, 500)}`);
    }
    if (map?.output?.cache !== 'HIT') {
      throw new Error(`warm-up job: tile_render was a ${map?.output?.cache}, not a HIT`);
    }
  }
  const chatBody = JSON.stringify({ model: 'tinyllama', messages: [{ role: 'user', content: 'one park in Rome' }] });
  const chatHeaders = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  for (let i = 0; i < 5; i++) {
    const res = await getJson<unknown>(`${url}/v1/chat/completions`, {
      method: 'POST',
      body: chatBody,
      headers: chatHeaders,
    });
    if (res.status !== 200) throw new Error(`warm-up chat answered ${res.status}: ${JSON.stringify(res.body)}`);
  }
  const upstreamTileFetches = upstream.requests();
  console.log(
    `warm-up: ${tileCells.length} tiles fetched ${processes > 1 ? `${rounds} times on fresh connections` : 'once'} (${upstreamTileFetches} upstream fetches, ` +
      `${fmt(await upstream.meanBytes())} bytes each on average), 5 jobs complete ` +
      `with tile_render cache HIT, 5 chat completions`,
  );

  // ---- scenarios -------------------------------------------------------------------------------------------
  const computeRequest: autocannon.Request = {
    method: 'POST',
    path: '/v1/compute',
    // A fresh nonce and signature per request: every request is a new job, never a replay of a stored one.
    setupRequest: (req) => ({ ...req, ...signedJob() }),
  };
  const tileRequests: autocannon.Request[] = tileCells.map((cell) => ({ method: 'GET', path: tilePath(cell) }));
  const chatRequest: autocannon.Request = {
    method: 'POST',
    path: '/v1/chat/completions',
    headers: chatHeaders,
    body: chatBody,
  };

  const run = async (name: string, requests: autocannon.Request[]): Promise<ScenarioSummary> => {
    const result = await autocannon({ url, connections: CONNECTIONS, duration: SECONDS, requests });
    const summary = summarizeScenario(name, result);
    console.log(formatScenario(summary));
    return summary;
  };
  const tileStats = async () =>
    (await getJson<{ totals: { hits: number; misses: number; errors: number } }>(`${url}/v1/tiles/stats?hours=1`)).body
      .totals;

  console.log(`\nscenario  mean req/s  latency`);
  const summaries: ScenarioSummary[] = [];
  const problems: string[] = [];

  const worker = await sealedWorkerStore(SYNC_RECORDS, Date.now());
  const syncing = pushUnderLoad(worker, url);
  summaries.push(await run('compute', [computeRequest]));
  const synced = await syncing;
  console.log(
    `sync (during compute): a worker pushed ${fmt(synced.round.records)} records and ${synced.round.seals} seals ` +
      `of epochs ${worker.epochs.join(', ')} in ${fmt(synced.ms)} ms, ${synced.round.refused} refused`,
  );
  if (synced.round.records !== SYNC_RECORDS || synced.round.seals !== worker.epochs.length || synced.round.refused) {
    problems.push(
      `sync: ${JSON.stringify(synced.round)}, expected ${SYNC_RECORDS} records, ${worker.epochs.length} seals`,
    );
  }
  worker.close();

  const before = await tileStats();
  summaries.push(await run('tiles', tileRequests));
  const after = await tileStats();
  // Under WEB_CONCURRENCY the stats are the answering process's own; the upstream's count covers them all.
  const misses = processes > 1 ? 0 : after.misses - before.misses;
  if (misses > 0 || upstream.requests() > upstreamTileFetches) {
    problems.push(`tiles: ${misses} cache misses, ${upstream.requests() - upstreamTileFetches} upstream fetches`);
  }

  const chatBefore = chatCalls.count + runtime.requests.length;
  summaries.push(await run('chat', [chatRequest]));
  const runtimeCalls = chatCalls.count + runtime.requests.length - chatBefore;

  // The records written so far, of the three kinds the load made.
  const ids: string[] = [];
  for (const collection of ['compute_job', 'inference', 'tile']) {
    const page = await getJson<{ records: Array<{ id: string }> }>(
      `${url}/store/query?collection=${collection}&limit=340`,
    );
    ids.push(...page.body.records.map((r) => r.id).filter((id) => !id.startsWith('bench-sync-')));
  }
  const own = ids.length;
  // Besides this run's unsealed records, the worker's sealed ones: each read builds its Merkle proof.
  ids.push(...worker.sampleIds);
  for (const [id, sealed] of [
    [ids[0]!, false],
    [worker.sampleIds[0]!, true],
  ] as const) {
    const sample = await getJson<{ pending?: boolean; verified?: boolean; record?: { id?: string } }>(
      `${url}/store/proof/${encodeURIComponent(id)}`,
    );
    const expected = sealed ? sample.body.verified === true : sample.body.pending === true;
    if (sample.status !== 200 || sample.body.record?.id !== id || !expected) {
      throw new Error(`GET /store/proof/${id} answered ${sample.status}: ${JSON.stringify(sample.body).slice(0, 300)}`);
    }
  }
  const proofRequests: autocannon.Request[] = ids.map((id) => ({
    method: 'GET',
    path: `/store/proof/${encodeURIComponent(id)}`,
  }));
  summaries.push(await run('proofs', proofRequests));

  if (MIXED) {
    // Each connection cycles through the four kinds in turn.
    summaries.push(await run('mixed', [computeRequest, tileRequests[1]!, chatRequest, proofRequests[0]!]));
  }

  console.log(
    `\nnotes: compute = 2-step jobs (inference + tile_render, parallel), each body signed with a new nonce ` +
      `(${fmt(nonce)} signed in all); tiles = ${tileRequests.length} warmed tiles, ${misses} misses during the scenario; ` +
      `chat: ${fmt(runtimeCalls)} runtime calls for ${fmt(summaries[2]!.requests)} completions; ` +
      `proofs = ${own} unsealed records of this run (compute_job, inference, tile: 200 {pending: true}) and ` +
      `${worker.sampleIds.length} sealed records of the worker (200 with a verified Merkle proof)`,
  );
  for (const s of summaries) problems.push(...scenarioProblems(s));

  // ---- stop, then audit ------------------------------------------------------------------------------------
  const closedEpoch = epochToSealBeforeStop(runStartMs, Date.now(), DEFAULT_EPOCH_GENESIS_MS);
  if (closedEpoch !== null) await waitForSeal(url, closedEpoch);
  const stopped = await service.stop();
  console.log(`service: SIGTERM → exit ${stopped.code} after ${fmt(stopped.ms)} ms`);
  if (stopped.code !== 0) problems.push(`service exited with ${stopped.code}:\n${service.stderrTail.join('\n')}`);
  const logs = summarizeLogLines(service.logLines);
  console.log(`service logs: ${logs.warn} warn, ${logs.error} error${logs.samples.map((s) => `\n  ${s}`).join('')}`);
  if (logs.error > 0) problems.push(`service: ${logs.error} error log lines`);

  const audit = await storeAudit(env);
  console.log(
    `audit: DATA_DIR=${dataDir} node --import tsx bin/geofabric.ts store audit → exit ${audit.code}` +
      (keepDataDir ? '' : ' (DATA_DIR removed at exit; BENCH_LOAD_KEEP=1 keeps it)'),
  );
  console.log(formatAudit(audit.summary));
  for (const p of audit.summary.problems.slice(0, 10)) console.log(`  ${JSON.stringify(p)}`);
  if (audit.summary.problems.length > 0 || audit.code !== 0) {
    problems.push(`store audit: ${formatAudit(audit.summary)}`);
  }

  clearInterval(trim);
  await Promise.all([runtime.close(), upstream.close()]);
  if (problems.length > 0) {
    keepDataDir = true;
    console.log(`\nFAILED (data kept in ${dataDir}):\n  ${problems.join('\n  ')}`);
    return { code: 1, summaries };
  }
  console.log('\nOK: no unexpected status, no connection error, no error log, clean stop, audit without problems');
  return { code: 0, summaries };
}

interface WorkerStore {
  store: ProofStore;
  key: KeyPair;
  epochs: number[];
  /** Every 15th record's id: sealed, so GET /store/proof answers its Merkle proof. */
  sampleIds: string[];
  close(): void;
}

/**
 * A worker node's store as it stands after three hours of work: `count` inference records spread over the three
 * epochs before the current one, each epoch sealed (chained) by the worker's key.
 */
async function sealedWorkerStore(count: number, nowMs: number): Promise<WorkerStore> {
  const db = openSqlite(':memory:');
  const store = createSqliteProofStore(db);
  const key = SYNC_KEY;
  const current = epochAt(nowMs, DEFAULT_EPOCH_GENESIS_MS);
  const epochs = [current - 3, current - 2, current - 1];
  const records: NewRecord[] = Array.from({ length: count }, (_, i) => {
    // In epoch order: a writer's records never go back to an epoch it has left.
    const epoch = epochs[Math.floor((i * epochs.length) / count)]!;
    return {
      id: `bench-sync-${randomUUID()}`,
      h3_cell: DEFAULT_JOB_CELL,
      epoch,
      collection_type: 'inference',
      payload_type: 'hive/inference',
      payload: { model: 'tinyllama', tokens_in: 12, tokens_out: 6 },
      written_at: new Date(epochWindow(epoch, DEFAULT_EPOCH_GENESIS_MS).start + i).toISOString(),
    };
  });
  for (let i = 0; i < records.length; i += 1000) await store.appendRecords(key, records.slice(i, i + 1000));
  await sealDueEpochs({ store, signer: key, now: nowMs, genesisMs: DEFAULT_EPOCH_GENESIS_MS, graceMs: 0 });
  const sampleIds = records.filter((_, i) => i % 15 === 0).map((r) => r.id);
  return { store, key, epochs, sampleIds, close: () => db.close() };
}

/** One sync round of the worker to the service (the sync agent's protocol), timed. */
async function pushUnderLoad(worker: WorkerStore, url: string): Promise<{ round: SyncRound; ms: number }> {
  await sleep(1000); // into the compute scenario
  const started = performance.now();
  const round = await createSyncAgent({ store: worker.store, centralUrl: url, signer: worker.key }).syncOnce();
  return { round, ms: performance.now() - started };
}

/** Keeps the service up until the auto-sealer has sealed `epoch` (it closed during the run; see load-report.ts). */
async function waitForSeal(url: string, epoch: number): Promise<void> {
  const page = await getJson<{ records: Array<{ id: string }> }>(
    `${url}/store/query?epoch_start=${epoch}&epoch_end=${epoch}&limit=1`,
  );
  const id = page.body.records[0]?.id;
  if (id === undefined) return;
  console.log(`the run crossed the hour: waiting for the service to seal epoch ${epoch} before stopping it`);
  const deadline = Date.now() + SEAL_WAIT_MS;
  while (Date.now() < deadline) {
    const proof = await getJson<{ pending?: boolean }>(`${url}/store/proof/${encodeURIComponent(id)}`);
    if (proof.status === 200 && proof.body.pending !== true) return;
    await sleep(1000);
  }
  throw new Error(`epoch ${epoch} was not sealed within ${SEAL_WAIT_MS / 1000} s`);
}

async function storeAudit(env: NodeJS.ProcessEnv): Promise<{ code: number | null; summary: AuditSummary }> {
  const child = geofabric(['store', 'audit'], env);
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  // 'close', not 'exit': by then stdout has been read to its end.
  const [code] = (await once(child, 'close')) as [number | null];
  children.delete(child);
  try {
    return { code, summary: parseAuditReport(stdout) };
  } catch (error) {
    throw new Error(`${(error as Error).message}\nstderr: ${stderr}`, { cause: error });
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    keepDataDir = dataDir !== undefined;
    console.error(`bench:load failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    if (dataDir) console.error(`data kept in ${dataDir}`);
    process.exit(1);
  },
);
