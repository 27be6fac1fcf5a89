import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { pino } from 'pino';
import {
  createGatewayClient,
  GatewayError,
  type WorkerDeclaration,
} from '../../activities/swarm-client/gateway-client.js';
import { loadConfig } from '../../bin/config.js';
import { readKeyFile } from '../../bin/key-file.js';
import { parseNvidiaSmi, startWorker, workerCheck, type RunningWorker } from '../../bin/worker.js';
import { createRecordBatcher } from '../../activities/proof/record-batcher.js';
import { auditStore } from '../../activities/proof/store-audit.js';
import { DEFAULT_EPOCH_GENESIS_MS, EPOCH_MS } from '../../core/epoch.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { signJob } from '../helpers/jobs.js';
import { startGateway } from '../helpers/gateway.js';
import { installTestRuntime } from '../workflows/temporal-runtime.js';

const ROOT = resolve(import.meta.dirname, '../..');
const ROME = '861e8050fffffff';
const LAPTOP = { platform: 'linux-x64', gpu: null, vram_gb: 0, ram_gb: 16, cores: 8 };
const silent = pino({ level: 'silent' });

interface ListedWorker {
  pk: string;
  relay: boolean;
  online: boolean;
  models: string[];
  tools: string[];
  hardware_tier: number;
  h3_cell: string;
}

const declaration = (extra: Partial<WorkerDeclaration> = {}): WorkerDeclaration => ({
  h3_cell: ROME,
  models: ['tinyllama'],
  tools: ['web-search'],
  hardware: LAPTOP,
  hardware_tier: 1,
  relay: false,
  version: '0.1.0',
  ...extra,
});

describe('geofabric worker', () => {
  let gw: Awaited<ReturnType<typeof startGateway>>;
  let key: KeyPair;
  const listed = async (): Promise<ListedWorker[]> =>
    ((await gw.get('/svc/workers')).body as { workers: ListedWorker[] }).workers;
  const stored = async (pk: string) => (await gw.workers.get(pk))!;

  beforeEach(async () => {
    gw = await startGateway();
    key = generateKeyPair();
  });
  afterEach(() => gw.close());

  describe('gateway client (activities/swarm-client)', () => {
    const client = (signer = key, url = gw.url) => createGatewayClient({ gatewayUrl: url, signer, timeoutMs: 5_000 });

    it('registers and heartbeats with strictly increasing seqs; the worker is listed online', async () => {
      const c = client();
      const registered = await c.register(declaration());
      assert.equal(registered.pk, key.publicKey);
      assert.equal(registered.trust_tier, 'seedling');
      assert.equal(registered.heartbeat_seq, 0);
      const first = await c.heartbeat();
      const second = await c.heartbeat();
      assert.equal(first.pk, key.publicKey);
      assert.ok(second.seq > first.seq, `${second.seq} > ${first.seq}`);
      assert.equal(second.online, true);
      assert.equal(second.next_heartbeat_within_s, 10);
      assert.equal((await stored(key.publicKey)).heartbeat_seq, second.seq);
      const [listedWorker] = (await listed()).filter((w) => w.pk === key.publicKey);
      assert.deepEqual(listedWorker && { ...listedWorker }, {
        ...listedWorker,
        pk: key.publicKey,
        relay: false,
        online: true,
        models: ['tinyllama'],
        tools: ['web-search'],
        hardware_tier: 1,
        h3_cell: ROME,
      });
    });

    it('continues from the gateway’s seq after a restart, so no heartbeat is ever a replay', async () => {
      const before = client();
      await before.register(declaration());
      for (let i = 0; i < 3; i++) await before.heartbeat();
      const restarted = client(); // a new process: its counter starts at zero
      const again = await restarted.register(declaration({ tools: [] }));
      assert.equal(again.heartbeat_seq, 3);
      assert.equal(restarted.lastSeq(), 3);
      const beat = await restarted.heartbeat();
      assert.equal(beat.seq, 4);
      assert.deepEqual((await stored(key.publicKey)).tools, []);
    });

    it("turns a refusal into a GatewayError carrying the server's error and detail", async () => {
      const c = client();
      await c.register(declaration());
      await c.heartbeat(10);
      await assert.rejects(c.heartbeat(10), (error: unknown) => {
        assert.ok(error instanceof GatewayError);
        assert.equal(error.status, 401);
        assert.equal(error.code, 'stale_request');
        assert.ok(error.detail && error.detail.length > 0);
        assert.match(error.message, /\/svc\/workers\/heartbeat: HTTP 401 stale_request: /);
        return true;
      });
      await assert.rejects(client().register(declaration({ models: ['gpt-5'] })), {
        name: 'GatewayError',
        status: 400,
        code: 'invalid_model',
      });
      await assert.rejects(client(generateKeyPair()).heartbeat(), { status: 404, code: 'worker_not_found' });
    });

    it('reports an unreachable gateway as gateway_unreachable (status 0)', async () => {
      await assert.rejects(client(key, 'http://127.0.0.1:9').register(declaration()), {
        name: 'GatewayError',
        status: 0,
        code: 'gateway_unreachable',
      });
    });
  });

  describe('startWorker', () => {
    let dataDir: string;
    let worker: RunningWorker | undefined;
    const env = (extra: Record<string, string> = {}) =>
      loadConfig({
        DATA_DIR: dataDir,
        GATEWAY_URL: gw.url,
        LOG_LEVEL: 'silent',
        WORKER_CELL: ROME,
        ...extra,
      });

    beforeEach(() => {
      dataDir = mkdtempSync(join(tmpdir(), 'geofabric-worker-'));
    });
    afterEach(async () => {
      await worker?.stop();
      worker = undefined;
      rmSync(dataDir, { recursive: true, force: true });
    });

    it('a relay registers with relay: true, polls no queue, heartbeats and drains (no Temporal needed)', async () => {
      worker = await startWorker(env({ WORKER_RELAY: 'true' }), { logger: silent, hardware: LAPTOP, heartbeatMs: 50 });
      assert.deepEqual(worker.plan.queues, []);
      const [relay] = (await listed()).filter((w) => w.pk === worker!.pk);
      assert.equal(relay?.relay, true);
      assert.equal(relay?.online, true);
      assert.deepEqual(relay?.models, []);
      await sleep(300);
      const seq = (await stored(worker.pk)).heartbeat_seq;
      assert.ok(seq >= 2, `heartbeats arrived (seq ${seq})`);
      assert.ok(existsSync(join(dataDir, 'worker', 'node-key.json')), 'the node key lives under DATA_DIR/worker');
      assert.ok(existsSync(join(dataDir, 'worker', 'worker.db')), 'the local proof store lives there too');

      await worker.stop();
      await worker.stop(); // idempotent
      assert.equal((await listed()).find((w) => w.pk === worker!.pk)?.online, false, 'it left the registry');
      const after = (await stored(worker.pk)).heartbeat_seq;
      await sleep(200);
      assert.equal((await stored(worker.pk)).heartbeat_seq, after, 'no heartbeat after stop');
      worker = undefined;
    });

    it('keeps its key across restarts and its heartbeats stay fresh', async () => {
      worker = await startWorker(env({ WORKER_RELAY: 'true' }), { logger: silent, hardware: LAPTOP, heartbeatMs: 50 });
      const pk = worker.pk;
      await sleep(200);
      await worker.stop();
      const seq = (await stored(pk)).heartbeat_seq;
      worker = await startWorker(env({ WORKER_RELAY: 'true' }), { logger: silent, hardware: LAPTOP, heartbeatMs: 50 });
      assert.equal(worker.pk, pk);
      await sleep(200);
      assert.ok((await stored(pk)).heartbeat_seq > seq, 'the restarted worker continued above its old seq');
    });

    it('re-registers when the gateway refuses a heartbeat as stale (a lost answer left the gateway ahead)', async () => {
      worker = await startWorker(env({ WORKER_RELAY: 'true' }), { logger: silent, hardware: LAPTOP, heartbeatMs: 50 });
      // Someone holding the worker's key (the worker itself, whose answer was lost) sent a far higher seq.
      const workerKey = readKeyFile(join(dataDir, 'worker', 'node-key.json'));
      const ahead = signJob(workerKey, { seq: 1_000_000 });
      assert.equal((await gw.post('/svc/workers/heartbeat', ahead.body, ahead.headers)).status, 200);
      await sleep(400);
      assert.ok((await stored(worker.pk)).heartbeat_seq > 1_000_000, 'the worker caught up and beats again');
    });

    it('drains with a final sync: records its store holds reach the central store before it closes', async () => {
      worker = await startWorker(env({ WORKER_RELAY: 'true' }), { logger: silent, hardware: LAPTOP });
      await sleep(100); // the first sync round (at start) has found nothing
      // A record the worker wrote while running (here through a second connection to its SQLite file).
      const workerKey = readKeyFile(join(dataDir, 'worker', 'node-key.json'));
      const db = openSqlite(join(dataDir, 'worker', 'worker.db'));
      const writer = createRecordBatcher({
        store: createSqliteProofStore(db),
        signer: workerKey,
        clock: Date.now,
        genesisMs: DEFAULT_EPOCH_GENESIS_MS,
      });
      const record = await writer.write({
        id: 'job-1:ask',
        h3_cell: ROME,
        collection_type: 'inference',
        payload_type: 'hive/inference',
        payload: { model: 'tinyllama', text: 'three parks' },
      });
      await writer.close();
      db.close();
      assert.equal(await gw.proofs.getRecord(record.id), null);
      await worker.stop();
      const central = await gw.proofs.getRecord(record.id);
      assert.equal(central?.record_hash, record.record_hash);
      assert.equal(central?.address.pk, worker.pk);
      worker = undefined;
    });

    /** A relay worker's config for a gateway of its own on `clock`, the worker's (for its signed requests). */
    async function gatewayOnClock(clock: () => number) {
      const gateway = await startGateway({ clock });
      after(() => gateway.close());
      return { gateway, config: env({ WORKER_RELAY: 'true', GATEWAY_URL: gateway.url }) };
    }

    it('seals at a graceful stop every epoch that has ended, without waiting out the seal grace', async () => {
      // Ten seconds into an hour: the previous epoch has ended, but its 60 s grace has not passed.
      const hourStart = Math.floor(Date.now() / EPOCH_MS) * EPOCH_MS;
      const clock = () => hourStart + 10_000;
      const { config } = await gatewayOnClock(clock);
      worker = await startWorker(config, { logger: silent, hardware: LAPTOP, clock });
      const workerKey = readKeyFile(join(dataDir, 'worker', 'node-key.json'));
      const db = openSqlite(join(dataDir, 'worker', 'worker.db'));
      const local = createSqliteProofStore(db);
      const writer = createRecordBatcher({
        store: local,
        signer: workerKey,
        clock: () => hourStart - 5_000, // the last seconds of the previous epoch
        genesisMs: DEFAULT_EPOCH_GENESIS_MS,
      });
      const record = await writer.write({
        id: 'job-2:ask',
        h3_cell: ROME,
        collection_type: 'inference',
        payload_type: 'hive/inference',
        payload: { model: 'tinyllama', text: 'late in the hour' },
      });
      await writer.close();
      assert.equal(await local.latestSeal(worker.pk), null, 'not sealed yet: inside the grace');
      await worker.stop();
      const seal = await local.latestSeal(worker.pk);
      assert.equal(seal?.epoch, record.address.epoch, 'the ended epoch was sealed at the stop');
      db.close();
      worker = undefined;
    });

    it('prunes from its store the epochs the central store holds, once older than WORKER_STORE_RETENTION_HOURS', async () => {
      const hourStart = Math.floor(Date.now() / EPOCH_MS) * EPOCH_MS;
      let now = hourStart + 10_000;
      const clock = () => now;
      const { gateway, config } = await gatewayOnClock(clock);
      worker = await startWorker(config, { logger: silent, hardware: LAPTOP, clock });
      const workerKey = readKeyFile(join(dataDir, 'worker', 'node-key.json'));
      const db = openSqlite(join(dataDir, 'worker', 'worker.db'));
      after(() => db.close());
      const local = createSqliteProofStore(db);
      // Steps it ran two hours and one hour ago (here through a second connection to its SQLite file).
      const written = [];
      for (const [ago, n] of [
        [2, 3],
        [1, 2],
      ] as const) {
        const writer = createRecordBatcher({
          store: local,
          signer: workerKey,
          clock: () => hourStart - ago * EPOCH_MS + 1_000,
          genesisMs: DEFAULT_EPOCH_GENESIS_MS,
        });
        for (let i = 0; i < n; i++) {
          written.push(
            await writer.write({
              id: `job-${ago}-${i}:ask`,
              h3_cell: ROME,
              collection_type: 'inference',
              payload_type: 'hive/inference',
              payload: { model: 'tinyllama', text: `step ${i}` },
            }),
          );
        }
        await writer.close();
      }
      const [older, newer] = [written[0]!.address.epoch, written[4]!.address.epoch];
      await worker.stop(); // seals both epochs and syncs: the central store holds them
      for (const record of written) assert.ok(await gateway.proofs.getRecord(record.id), 'synced');

      // Nine days later (the default window is eight): the restarted worker prunes at start.
      now = hourStart + 9 * 24 * EPOCH_MS + 10_000;
      worker = await startWorker(config, { logger: silent, hardware: LAPTOP, clock });
      for (let waited = 0; (await local.recordsOfEpoch(worker.pk, older)).length > 0; waited += 50) {
        assert.ok(waited < 15_000, 'the older epoch was not pruned');
        await sleep(50);
      }
      await worker.stop();
      // The epoch of its latest record stays (the next append continues from it); its seals stay.
      assert.equal((await local.recordsOfEpoch(worker.pk, newer)).length, 2);
      const pruned = await local.prunedEpochs(worker.pk);
      assert.ok(pruned.includes(older) && !pruned.includes(newer), `pruned ${pruned.join(', ')}`);
      assert.equal((await local.getSeal(worker.pk, older))?.record_count, 3);
      for (const record of written) assert.ok(await gateway.proofs.getRecord(record.id), 'the central store keeps all');
      const audit = await auditStore(local);
      assert.deepEqual(audit.problems, []);
      assert.equal(audit.epochs_pruned, 1);
      // Its later epochs were sealed on the chain and reached the central store.
      const latest = (await local.latestSeal(worker.pk))!;
      assert.ok(latest.epoch > newer);
      assert.equal((await gateway.proofs.getSeal(worker.pk, latest.epoch))?.seal_hash, latest.seal_hash);
      assert.deepEqual((await auditStore(gateway.proofs)).problems, []);
      worker = undefined;
    });

    it('learns its trust tier from the gateway', async () => {
      worker = await startWorker(env({ WORKER_RELAY: 'true' }), { logger: silent, hardware: LAPTOP });
      assert.equal(worker.trustTier(), 'seedling');
    });

    it('refuses to start when the gateway refuses the registration (no retry), and closes its store', async () => {
      const started = Date.now();
      await assert.rejects(
        startWorker(env({ WORKER_RELAY: 'true' }), { logger: silent, hardware: { ...LAPTOP, ram_gb: 0 } }),
        (error: Error) => {
          // One line naming GATEWAY_URL (bin/startup-errors.ts), the gateway's refusal as its cause.
          assert.equal(error.name, 'StartupError');
          assert.match(
            error.message,
            /^GATEWAY_URL=\S+: the gateway refused this worker's registration \(HTTP 400 invalid_request/,
          );
          assert.ok(error.cause instanceof GatewayError && error.cause.status === 400);
          return true;
        },
      );
      assert.ok(Date.now() - started < 2_000, 'a refusal is final: no retries');
      worker = await startWorker(env({ WORKER_RELAY: 'true' }), { logger: silent, hardware: LAPTOP });
    });

    it('waits for a gateway that is not up yet', async () => {
      let calls = 0;
      const flaky: typeof fetch = async (input, init) => {
        calls += 1;
        if (calls === 1) throw new TypeError('fetch failed: ECONNREFUSED');
        return fetch(input, init);
      };
      worker = await startWorker(env({ WORKER_RELAY: 'true' }), { logger: silent, hardware: LAPTOP, fetch: flaky });
      assert.equal(calls, 2);
      assert.equal((await stored(worker.pk)).relay, true);
    });

    it('stops cleanly when Temporal is unreachable after registering (stores closed, nothing left running)', async () => {
      installTestRuntime();
      await assert.rejects(
        startWorker(env({ TEMPORAL_ADDRESS: '127.0.0.1:9', WORKER_RUNTIME_URL: 'http://127.0.0.1:9' }), {
          logger: silent,
          hardware: LAPTOP,
        }),
        /connect|refused/i,
      );
      // The store was closed: a new worker on the same DATA_DIR opens it again.
      worker = await startWorker(env({ WORKER_RELAY: 'true' }), { logger: silent, hardware: LAPTOP });
    });
  });

  describe('the CLI process', () => {
    it('runs until SIGTERM, then drains and exits 0', async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'geofabric-cli-'));
      const child = spawn(process.execPath, ['--import', 'tsx', 'bin/geofabric.ts', 'worker'], {
        cwd: ROOT,
        env: { ...process.env, DATA_DIR: dataDir, GATEWAY_URL: gw.url, WORKER_RELAY: 'true', LOG_LEVEL: 'info' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let log = '';
      child.stdout.on('data', (chunk: Buffer) => (log += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (log += chunk.toString()));
      const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
      try {
        for (let i = 0; i < 150 && !log.includes('worker: started'); i++) await sleep(100);
        assert.match(log, /worker: started/);
        assert.equal((await listed()).length, 1, 'registered');
        child.kill('SIGTERM');
        const [code] = await exited;
        assert.equal(code, 0, log);
        assert.match(log, /worker: draining/);
        assert.match(log, /worker: left the registry/);
        assert.match(log, /worker: stopped/);
        // It said so before it stopped: offline at once, not after the liveness window.
        const [gone] = await listed();
        assert.equal(gone?.online, false);
        assert.equal(((await gw.get('/svc/status')).body as { workers: { online: number } }).workers.online, 0);
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  });

  describe('--check', () => {
    it('prints hardware, tier, models, tools and queues as JSON, and registers nothing', async () => {
      const dataDir = join(tmpdir(), `geofabric-check-${process.pid}-${Date.now()}`);
      const { stdout } = await promisify(execFile)('npx', ['tsx', 'bin/geofabric.ts', 'worker', '--check'], {
        cwd: ROOT,
        env: {
          ...process.env,
          DATA_DIR: dataDir,
          GATEWAY_URL: gw.url,
          WORKER_CELL: ROME,
          WORKER_RUNTIME_URL: 'http://127.0.0.1:11434',
          WORKER_MODELS: 'tinyllama',
          WORKER_TOOLS: 'web-search,python-repl',
          TASK_QUEUE_PREFIX: 'test',
        },
        timeout: 60_000,
      });
      const plan = JSON.parse(stdout) as Record<string, unknown>;
      assert.equal(plan.h3_cell, ROME);
      assert.equal(plan.routing_cell, '851e8053fffffff');
      assert.equal(plan.relay, false);
      assert.deepEqual(Object.keys(plan.hardware as object).sort(), ['cores', 'gpu', 'platform', 'ram_gb', 'vram_gb']);
      assert.ok([1, 2, 3].includes(plan.hardware_tier as number));
      assert.deepEqual(plan.models, ['tinyllama']);
      assert.deepEqual(plan.tools, ['web-search', 'python-repl']);
      // One queue, that of its whole tool set: not one per subset of its tools.
      assert.deepEqual(plan.queues, ['test/851e8053fffffff/python-repl+web-search']);
      assert.equal(plan.central_store_url, gw.url);
      assert.deepEqual(await listed(), [], 'nothing registered');
      assert.equal(existsSync(dataDir), false, 'no key or store written');
    });

    const check = (env: Record<string, string>) => workerCheck(loadConfig({ WORKER_CELL: ROME, ...env }), LAPTOP);

    it('a worker without a runtime serves no models, advertises no tools and polls only its cell queue', async () => {
      const plan = await check({ WORKER_TOOLS: 'web-search' });
      assert.deepEqual(plan.models, []);
      assert.deepEqual(plan.tools, []);
      assert.deepEqual(plan.queues, ['geofabric/851e8053fffffff']);
    });

    it('a relay polls no queue', async () => {
      const plan = await check({ WORKER_RELAY: 'true', WORKER_RUNTIME_URL: 'http://127.0.0.1:11434' });
      assert.equal(plan.relay, true);
      assert.deepEqual(plan.queues, []);
    });

    it('refuses a WORKER_TOOLS entry the tool registry does not know', async () => {
      await assert.rejects(
        check({ WORKER_RUNTIME_URL: 'http://127.0.0.1:11434', WORKER_TOOLS: 'web-search,teleport' }),
        {
          name: 'ConfigError',
          message: /WORKER_TOOLS: "teleport" is not a registry tool/,
        },
      );
    });

    it('uses CENTRAL_STORE_URL for the sync when set, and the routing resolution for the queues', async () => {
      const plan = await check({ CENTRAL_STORE_URL: 'http://central:8080', ROUTING_RESOLUTION: '4' });
      assert.equal(plan.central_store_url, 'http://central:8080');
      assert.deepEqual(plan.queues, [`geofabric/${plan.routing_cell}`]);
      assert.notEqual(plan.routing_cell, '851e8053fffffff');
    });
  });

  describe('GPU detection', () => {
    it('reads nvidia-smi and keeps the GPU with the most VRAM', () => {
      assert.deepEqual(parseNvidiaSmi('NVIDIA GeForce RTX 3060, 12288\nNVIDIA A100-SXM4-80GB, 81920\n'), {
        gpu: 'NVIDIA A100-SXM4-80GB',
        vram_gb: 80,
      });
      assert.equal(parseNvidiaSmi(''), null);
      assert.equal(parseNvidiaSmi('No devices were found'), null);
    });
  });
});
