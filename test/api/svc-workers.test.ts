import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { requestSigningMessage } from '../../core/gates/signature.js';
import { generateKeyPair, signMessage, type KeyPair } from '../../core/identity.js';
import { eligibleWorkers } from '../../core/worker-selection.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { signJob } from '../helpers/jobs.js';

const VECTORS = resolve(import.meta.dirname, '../fixtures/vectors/ed25519');
/** speccheck case 0: a small-order public key, with a signature that satisfies the cofactorless equation. */
const smallOrder = (
  JSON.parse(readFileSync(resolve(VECTORS, 'speccheck-cases.json'), 'utf8')) as {
    pub_key: string;
    signature: string;
  }[]
)[0]!;

const T0 = Date.UTC(2026, 2, 1, 12);

interface WorkerBody {
  pk: string;
  trust_tier: string;
  online: boolean;
  jobs_completed: number;
  heartbeat_seq: number;
  h3_cell: string;
  models: string[];
  tools: string[];
  version: string;
  last_seen: string;
  hardware?: unknown;
}
interface ErrorBody {
  error: string;
  detail?: string;
}

describe('worker registry over HTTP (/svc/workers)', () => {
  let now: number;
  let gw: Awaited<ReturnType<typeof startGateway>>;
  let alice: KeyPair;

  const registration = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    h3_cell: '861e8050fffffff',
    models: ['tinyllama', 'lfm2.5-1.2b-instruct'],
    tools: ['web-search', 'python-repl'],
    hardware: { platform: 'linux-x64', gpu: 'NVIDIA GeForce RTX 3060', vram_gb: 12, ram_gb: 32, cores: 12 },
    hardware_tier: 2,
    relay: false,
    version: '0.1.0',
    created_at: new Date(now).toISOString(),
    ...extra,
  });
  const send = (g: TestGateway, path: string, signed: ReturnType<typeof signJob>) =>
    g.post(path, signed.body, signed.headers);
  const register = (key: KeyPair, extra: Record<string, unknown> = {}) =>
    send(gw, '/svc/workers/register', signJob(key, registration(extra)));
  const heartbeat = (key: KeyPair, seq: number) => send(gw, '/svc/workers/heartbeat', signJob(key, { seq }));
  const listed = async () => (await gw.get('/svc/workers')).body as { workers: WorkerBody[]; online: number };
  const errorOf = (res: { body: unknown }) => (res.body as ErrorBody).error;

  beforeEach(async () => {
    now = T0;
    gw = await startGateway({ clock: () => now });
    alice = generateKeyPair();
  });
  afterEach(() => gw.close());

  describe('POST /svc/workers/register', () => {
    it('creates a seedling worker (201), online, with the declared version and hardware', async () => {
      const res = await register(alice);
      assert.equal(res.status, 201, res.text);
      const body = res.body as WorkerBody;
      assert.equal(body.pk, alice.publicKey);
      assert.equal(body.trust_tier, 'seedling');
      assert.equal(body.online, true);
      assert.equal(body.version, '0.1.0');
      assert.equal(body.heartbeat_seq, 0);
      assert.deepEqual(body.hardware, registration().hardware);
      assert.equal((await gw.workers.get(alice.publicKey))?.h3_cell, '861e8050fffffff');
    });

    it('updates a known worker (200), keeping its trust tier and counters', async () => {
      await register(alice);
      for (let i = 0; i < 10; i++) await gw.workers.recordOutcome(alice.publicKey, 'completed', `job-${i}`);
      now += 5000;
      const res = await register(alice, { version: '0.2.0', tools: ['web-search'], h3_cell: '861f1d48fffffff' });
      assert.equal(res.status, 200, res.text);
      const body = res.body as WorkerBody;
      assert.equal(body.trust_tier, 'explorer');
      assert.equal(body.jobs_completed, 10);
      assert.equal(body.version, '0.2.0');
      assert.deepEqual(body.tools, ['web-search']);
      assert.equal(body.h3_cell, '861f1d48fffffff');
    });

    it('refuses an unsigned registration with 401 signature_required', async () => {
      const res = await gw.post('/svc/workers/register', { ...registration(), requester_pk: alice.publicKey });
      assert.equal(res.status, 401);
      assert.equal(errorOf(res), 'signature_required');
    });

    it('refuses a body changed after signing with 401 invalid_signature', async () => {
      const signed = signJob(alice, registration());
      signed.body.hardware_tier = 1;
      const res = await send(gw, '/svc/workers/register', signed);
      assert.equal(res.status, 401);
      assert.equal(errorOf(res), 'invalid_signature');
      assert.equal(await gw.workers.get(alice.publicKey), null);
    });

    it("refuses a registration of alice's key signed by another key with 401 invalid_signature", async () => {
      const mallory = generateKeyPair();
      const body = { ...registration(), requester_pk: alice.publicKey };
      const signature = signMessage(mallory.secretKey, requestSigningMessage(body));
      const res = await gw.post('/svc/workers/register', { ...body, signature }, { 'x-idn-signature': signature });
      assert.equal(res.status, 401);
      assert.equal(errorOf(res), 'invalid_signature');
      assert.equal(await gw.workers.get(alice.publicKey), null);
    });

    it('refuses a small-order public key (speccheck case 0) with 400 invalid_public_key', async () => {
      const body = { ...registration(), requester_pk: smallOrder.pub_key, signature: smallOrder.signature };
      const res = await gw.post('/svc/workers/register', body, { 'x-idn-signature': smallOrder.signature });
      assert.equal(res.status, 400, res.text);
      assert.equal(errorOf(res), 'invalid_public_key');
      assert.match((res.body as ErrorBody).detail ?? '', /small-order/);
      assert.deepEqual((await listed()).workers, []);
    });

    it('refuses malformed public keys with 400 invalid_public_key', async () => {
      const signature = 'ab'.repeat(64);
      for (const pk of ['abc', alice.publicKey.toUpperCase(), alice.publicKey.slice(2), 'f'.repeat(64)]) {
        const body = { ...registration(), requester_pk: pk, signature };
        const res = await gw.post('/svc/workers/register', body, { 'x-idn-signature': signature });
        assert.equal(res.status, 400, pk);
        assert.equal(errorOf(res), 'invalid_public_key', pk);
      }
    });

    it('requires a fresh created_at: missing is 400 invalid_request, six minutes old is 401 stale_request', async () => {
      const { created_at: _omitted, ...undated } = registration();
      const missing = await send(gw, '/svc/workers/register', signJob(alice, undated));
      assert.equal(missing.status, 400);
      assert.equal(errorOf(missing), 'invalid_request');
      assert.match((missing.body as ErrorBody).detail ?? '', /created_at/);
      const old = await register(alice, { created_at: new Date(now - 6 * 60_000).toISOString() });
      assert.equal(old.status, 401);
      assert.equal(errorOf(old), 'stale_request');
    });

    it('refuses a declared hardware tier above what the hardware supports with 400 invalid_worker', async () => {
      const tier3 = await register(alice, { hardware_tier: 3 });
      assert.equal(tier3.status, 400);
      assert.equal(errorOf(tier3), 'invalid_worker');
      assert.match((tier3.body as ErrorBody).detail ?? '', /supports tier 2/);
      const cpuOnly = { platform: 'darwin-arm64', gpu: null, vram_gb: 0, ram_gb: 16, cores: 8 };
      const tier2 = await register(alice, { hardware: cpuOnly, hardware_tier: 2 });
      assert.equal(errorOf(tier2), 'invalid_worker');
      assert.equal((await register(alice, { hardware: cpuOnly, hardware_tier: 1 })).status, 201);
    });

    it('refuses unknown models (invalid_model), tools and versions (invalid_request) and bad cells (invalid_cell)', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ models: ['gpt-9'] }, 'invalid_model'],
        [{ models: ['llama-3.3-70b-versatile'] }, 'invalid_model'], // the backbone is not a worker model
        [{ tools: ['rm-rf'] }, 'invalid_request'],
        [{ version: 'latest' }, 'invalid_request'],
        [{ h3_cell: 'not-a-cell' }, 'invalid_cell'],
        [{ trust_tier: 'sovereign' }, 'invalid_request'], // trust is earned, never declared
      ];
      for (const [extra, code] of cases) {
        const res = await register(alice, extra);
        assert.equal(res.status, 400, JSON.stringify(extra));
        assert.equal(errorOf(res), code, JSON.stringify(extra));
      }
    });
  });

  describe('registration bounds (WORKER_REGISTRATIONS_PER_KEY_PER_HOUR, WORKER_NEW_KEYS_PER_ADDRESS_PER_HOUR)', () => {
    it('bounds new worker keys per address: a burst of made-up workers stops at the limit, 429 rate_limit', async () => {
      const results: number[] = [];
      for (let i = 0; i < 25; i++) results.push((await register(generateKeyPair(), { hardware_tier: 1 })).status);
      assert.deepEqual(results.slice(0, 10), Array(10).fill(201), 'the default allows ten new workers an hour');
      assert.deepEqual(results.slice(10), Array(15).fill(429));
      const refused = await register(generateKeyPair());
      assert.equal(errorOf(refused), 'rate_limit');
      assert.ok(Number(refused.headers.get('retry-after')) > 0);
      assert.equal((await listed()).workers.length, 10);
      // The next hour admits new ones again.
      now += 3_600_000;
      assert.equal((await register(generateKeyPair())).status, 201);
    });

    it('bounds registrations per worker key, with configurable limits', async () => {
      await gw.close();
      gw = await startGateway({
        clock: () => now,
        config: { registrationLimits: { perKeyPerHour: 3, newKeysPerAddressPerHour: 2 } },
      });
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        now += 1000;
        statuses.push((await register(alice)).status);
      }
      assert.deepEqual(statuses, [201, 200, 200, 429, 429]);
      assert.equal((await register(generateKeyPair())).status, 201);
      assert.equal((await register(generateKeyPair())).status, 429, 'two new keys from this address (alice was one)');
    });
  });

  describe('POST /svc/workers/heartbeat', () => {
    it('answers with the seq, trust tier and the next heartbeat deadline', async () => {
      await register(alice);
      now += 30_000;
      const res = await heartbeat(alice, 1);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, {
        pk: alice.publicKey,
        seq: 1,
        trust_tier: 'seedling',
        online: true,
        next_heartbeat_within_s: 10,
      });
      assert.equal((await gw.workers.get(alice.publicKey))?.last_seen_ms, now);
    });

    it('answers 404 worker_not_found for a key that never registered', async () => {
      const res = await heartbeat(generateKeyPair(), 1);
      assert.equal(res.status, 404);
      assert.equal(errorOf(res), 'worker_not_found');
    });

    it('refuses a replayed heartbeat with 401 stale_request: the same seq again, or a captured body resent', async () => {
      await register(alice);
      const captured = signJob(alice, { seq: 7 });
      assert.equal((await send(gw, '/svc/workers/heartbeat', captured)).status, 200);
      now += 60_000;
      const resent = await send(gw, '/svc/workers/heartbeat', captured);
      assert.equal(resent.status, 401);
      assert.equal(errorOf(resent), 'stale_request');
      const again = await heartbeat(alice, 7);
      assert.equal(errorOf(again), 'stale_request');
      const older = await heartbeat(alice, 6);
      assert.equal(errorOf(older), 'stale_request');
      // The replays did not count as signs of life.
      assert.equal((await gw.workers.get(alice.publicKey))?.last_seen_ms, T0);
      assert.equal((await heartbeat(alice, 8)).status, 200);
    });

    it('refuses a heartbeat for another worker signed by a different key with 401 invalid_signature', async () => {
      await register(alice);
      const mallory = generateKeyPair();
      const body = { seq: 1, requester_pk: alice.publicKey };
      const signature = signMessage(mallory.secretKey, requestSigningMessage(body));
      const res = await gw.post('/svc/workers/heartbeat', { ...body, signature }, { 'x-idn-signature': signature });
      assert.equal(res.status, 401);
      assert.equal(errorOf(res), 'invalid_signature');
    });

    it('refuses a seq that is not a positive integer with 400 invalid_request', async () => {
      await register(alice);
      for (const seq of [0, -3, 1.5, '2']) {
        const res = await send(gw, '/svc/workers/heartbeat', signJob(alice, { seq }));
        assert.equal(res.status, 400, String(seq));
        assert.equal(errorOf(res), 'invalid_request');
      }
    });
  });

  describe('going offline', () => {
    it('is online for 30 s after its last sign of life, then neither listed online nor eligible', async () => {
      await register(alice);
      now = T0 + 30_000;
      assert.deepEqual(
        eligibleWorkers(await gw.workers.list(), { model: 'tinyllama' }, now).map((w) => w.pk),
        [alice.publicKey],
      );
      assert.equal((await listed()).workers[0]?.online, true);

      now = T0 + 30_001;
      assert.deepEqual(eligibleWorkers(await gw.workers.list(), { model: 'tinyllama' }, now), []);
      const list = await listed();
      assert.equal(list.workers[0]?.online, false);
      assert.equal(list.online, 0);

      assert.equal((await heartbeat(alice, 1)).status, 200);
      assert.equal((await listed()).workers[0]?.online, true);
      assert.equal(eligibleWorkers(await gw.workers.list(), { model: 'tinyllama' }, now).length, 1);
    });
  });

  describe('POST /svc/workers/leave', () => {
    const leave = (key: KeyPair, seq: number) =>
      send(gw, '/svc/workers/leave', signJob(key, { seq, created_at: new Date(now).toISOString() }));
    const status = async () =>
      (await gw.get('/svc/status')).body as { workers: { registered: number; online: number } };

    it('takes the worker offline at once: in /svc/workers, /svc/status and routing', async () => {
      await register(alice);
      assert.equal((await heartbeat(alice, 1)).status, 200);
      assert.equal((await status()).workers.online, 1);
      now += 1_000;
      const res = await leave(alice, 2);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, {
        pk: alice.publicKey,
        seq: 2,
        online: false,
        left_at: new Date(now).toISOString(),
      });
      const list = await listed();
      assert.equal(list.workers[0]?.online, false);
      assert.equal(list.online, 0);
      const counted = (await status()).workers;
      assert.equal(counted.registered, 1);
      assert.equal(counted.online, 0);
      assert.deepEqual(eligibleWorkers(await gw.workers.list(), { model: 'tinyllama' }, now), []);
    });

    it('is replay-safe: a resent leave, or a heartbeat sent before it, is 401 stale_request', async () => {
      await register(alice);
      const captured = signJob(alice, { seq: 5, created_at: new Date(now).toISOString() });
      assert.equal((await send(gw, '/svc/workers/leave', captured)).status, 200);
      // The worker comes back: it registers again and beats above the leave's seq.
      assert.equal((await register(alice, { created_at: new Date(now + 1).toISOString() })).status, 200);
      assert.equal((await heartbeat(alice, 6)).status, 200);
      assert.equal((await listed()).workers[0]?.online, true);
      // The captured leave resent (within gate 1's 5 minutes) does not take it offline again.
      const resent = await send(gw, '/svc/workers/leave', captured);
      assert.equal(resent.status, 401);
      assert.equal(errorOf(resent), 'stale_request');
      // Nor does an old heartbeat bring back a worker that left.
      assert.equal((await leave(alice, 7)).status, 200);
      assert.equal(errorOf(await heartbeat(alice, 6)), 'stale_request');
      assert.equal((await listed()).workers[0]?.online, false);
    });

    it('needs created_at, the worker key, and a registered worker', async () => {
      await register(alice);
      const undated = await send(gw, '/svc/workers/leave', signJob(alice, { seq: 1 }));
      assert.equal(undated.status, 400);
      assert.equal(errorOf(undated), 'invalid_request');
      const stranger = await leave(generateKeyPair(), 1);
      assert.equal(stranger.status, 404);
      assert.equal(errorOf(stranger), 'worker_not_found');
      const mallory = generateKeyPair();
      const body = { seq: 1, created_at: new Date(now).toISOString(), requester_pk: alice.publicKey };
      const signature = signMessage(mallory.secretKey, requestSigningMessage(body));
      const forged = await gw.post('/svc/workers/leave', { ...body, signature }, { 'x-idn-signature': signature });
      assert.equal(forged.status, 401);
      assert.equal((await listed()).workers[0]?.online, true, 'nobody else can take a worker offline');
    });
  });

  describe('GET /svc/workers', () => {
    it('lists every worker with its online flag and relay flag, without device details', async () => {
      const relay = generateKeyPair();
      await register(alice);
      await register(relay, { relay: true, models: [], tools: [] });
      const list = (await gw.get('/svc/workers')).body as {
        workers: (WorkerBody & { relay: boolean })[];
        total: number;
        online: number;
      };
      assert.equal(list.total, 2);
      assert.equal(list.online, 2);
      assert.deepEqual(list.workers.map((w) => w.pk).sort(), [alice.publicKey, relay.publicKey].sort());
      assert.equal(list.workers.find((w) => w.pk === relay.publicKey)?.relay, true);
      for (const w of list.workers) assert.equal(w.hardware, undefined);
      // A relay routes jobs; it never runs one.
      assert.deepEqual(
        eligibleWorkers(await gw.workers.list(), {}, now).map((w) => w.pk),
        [alice.publicKey],
      );
    });
  });
});
