/**
 * Abuse bounds (docs/operations.md): signed requests replayed under another key or with another body fail.
 *
 * For every signed route of the gateway (every `auth: 'signed'` route of api/routes/*.ts, asserted against
 * /openapi.json so a new one cannot be missed) a valid signed request is taken and
 *   (a) one body field is changed after signing, at the top level and nested,
 *   (b) the signer field (`requester_pk`) is swapped to another key, the signature kept,
 *   (c) the body is re-signed by another key, the original `requester_pk` kept,
 *   (d) the signature of one request is sent with the body of another (and the header of one with the other),
 * and each must be refused with 401 `invalid_signature` and leave no trace in what the public GET routes show
 * (jobs, ledger balances, workers, records, seals). Each attack is followed by the untampered request, which
 * must be accepted and change what the GETs show, so "no effect" is never vacuous.
 * (e) An exact replay: what each route does is asserted (compute and proof purchases derive their ids from the
 * signature, so the replay is the same job / purchase and is never run or charged twice; store pushes are
 * idempotent by id; a heartbeat needs a growing seq; a registration is idempotent within 5 minutes); a
 * `created_at` more than 5 minutes from the server clock is 401 `stale_request` everywhere.
 * The governance server's POST /token (signed by the agent) gets the same treatment.
 */
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { issueCertificate, type DelegationCertificate } from '../../core/delegation-cert.js';
import { ERROR_STATUS, type ErrorCode } from '../../core/errors.js';
import { requestSigningMessage, signRequestBody } from '../../core/gates/signature.js';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { epochAt } from '../../core/epoch.js';
import { generateKeyPair, signMessage, type KeyPair } from '../../core/identity.js';
import { jobIdFromSignature } from '../../core/job-hash.js';
import type { ProofRecord, Seal } from '../../core/proof-types.js';
import { createGovernanceServer, type GovernanceServer } from '../../mcp/governance/server.js';
import type { AuditStore } from '../../store/audit-store.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { startFakeRuntime, type FakeRuntime } from '../helpers/fake-openai-runtime.js';
import { startGateway, type TestResponse } from '../helpers/gateway.js';
import { inferenceJob } from '../helpers/jobs.js';
import { inferenceEntry, sealThrough } from '../helpers/proofs.js';
import { signedReading } from '../helpers/telemetry.js';

type Gateway = Awaited<ReturnType<typeof startGateway>>;
type Body = Record<string, unknown>;

const T0 = Date.UTC(2026, 2, 1, 12);
const MINUTE = 60_000;
const DAY = 86_400_000;
const WORKER_MODEL = 'lfm2.5-1.2b-instruct';
// Two epochs before T0's: EPOCH is past the sync window (its records go with their seals), EPOCH + 1 is in it.
const EPOCH = epochAt(T0) - 2;
const iso = (ms: number) => new Date(ms).toISOString();

/** A signed request as a client sends it: the body (with `signature`) and the X-Idn-Signature value. */
interface Signed {
  body: Body;
  signature: string;
}

const sign = (key: KeyPair, unsigned: Body): Signed => {
  const signed = signRequestBody(key.secretKey, unsigned);
  return { body: signed.body, signature: signed.signature };
};

const errorOf = (res: { body: unknown }) => (res.body as { error?: string } | undefined)?.error;

function assertRefused(res: { status: number; body: unknown; text?: string }, code: ErrorCode): void {
  assert.equal(errorOf(res), code, res.text ?? JSON.stringify(res.body));
  assert.equal(res.status, ERROR_STATUS[code]);
}

/** The four forgeries (a)–(d) of one valid request, built from two different valid requests of `signer`. */
interface Forgery {
  name: string;
  build(valid: Signed, other: Signed, mallory: KeyPair): { body: Body; header: string };
}

function forgeries(route: SignedRoute): Forgery[] {
  const list: Forgery[] = [
    {
      name: '(a) a top-level field changed after signing',
      build: (valid) => {
        const body = structuredClone(valid.body);
        route.topLevel(body);
        return { body, header: valid.signature };
      },
    },
  ];
  const nested = route.nested;
  if (nested) {
    list.push({
      name: '(a) a nested field changed after signing',
      build: (valid) => {
        const body = structuredClone(valid.body);
        nested(body);
        return { body, header: valid.signature };
      },
    });
  }
  list.push(
    {
      name: '(b) requester_pk swapped to another key, signature kept',
      build: (valid, _other, mallory) => ({
        body: { ...valid.body, requester_pk: mallory.publicKey },
        header: valid.signature,
      }),
    },
    {
      name: '(c) re-signed by another key, requester_pk kept',
      build: (valid, _other, mallory) => {
        const { signature: _dropped, ...unsigned } = valid.body;
        const signature = signMessage(mallory.secretKey, requestSigningMessage(unsigned));
        return { body: { ...unsigned, signature }, header: signature };
      },
    },
    {
      name: "(d) one request's signature with another request's body",
      build: (valid, other) => ({ body: { ...other.body, signature: valid.signature }, header: valid.signature }),
    },
    {
      name: "(d) one request's header with another (validly signed) request's body",
      build: (valid, other) => ({ body: other.body, header: valid.signature }),
    },
  );
  return list;
}

interface SignedRoute {
  name: string;
  /** Default POST. */
  method?: 'PUT';
  /** The path of a request with this body (the proof purchase names its record in the path too). */
  path(body: Body): string;
  /** Preconditions on the fresh gateway (a registered worker, pushed records …). */
  setup(): Promise<void>;
  /** Two different valid unsigned bodies of the route (requester_pk is added by signing). */
  body(variant: 0 | 1): Body;
  /** Changes one top-level field in place. */
  topLevel(body: Body): void;
  /** Changes one nested field in place; absent when the route's body is flat. */
  nested?: (body: Body) => void;
  /** What the public GET routes show of the route's effects. */
  observe(): Promise<unknown>;
  /** The status of an accepted request. */
  accepted: number;
}

describe('signed requests: tampering, key swaps and replays', function () {
  this.timeout(20_000);
  let now: number;
  let gw: Gateway;
  let runtime: FakeRuntime;
  let alice: KeyPair;
  let mallory: KeyPair;
  /** The writer of the proof records pushed to the store (not the pusher). */
  let writer: KeyPair;
  let records: ProofRecord[];
  let seals: Seal[];

  before(async () => {
    runtime = await startFakeRuntime(WORKER_MODEL, () => ({
      content: 'Villa Borghese.',
      usage: { prompt_tokens: 12, completion_tokens: 3 },
    }));
    writer = generateKeyPair();
    const local = createSqliteProofStore(openSqlite(':memory:'));
    records = await local.appendRecords(writer, [inferenceEntry('rec-a', EPOCH), inferenceEntry('rec-b', EPOCH + 1)]);
    seals = await sealThrough(local, writer, EPOCH + 1);
    assert.deepEqual(
      seals.map((s) => s.epoch),
      [EPOCH, EPOCH + 1],
    );
  });
  after(() => runtime.close());

  beforeEach(async () => {
    now = T0;
    alice = generateKeyPair();
    mallory = generateKeyPair();
    gw = await startGateway({
      clock: () => now,
      swarm: { workerRuntimeUrl: runtime.url, workerModels: [WORKER_MODEL] },
      // Alice relays the writer's records as a node would; the writer pushes its own as a node.
      config: { operatorToken: 'op', proofSync: { nodeKeys: [alice.publicKey, writer.publicKey] } },
    });
  });
  afterEach(() => gw.close());

  const send = (path: string, body: Body, header: string, method: 'POST' | 'PUT' = 'POST') =>
    gw.request(method, path, { body, headers: { 'x-idn-signature': header } });
  const sendSigned = (route: SignedRoute, signed: Signed) =>
    send(route.path(signed.body), signed.body, signed.signature, route.method);
  const get = async (path: string) => {
    const res = await gw.get(path, { authorization: 'Bearer op' });
    assert.equal(res.status, 200, `${path}: ${res.text}`);
    return res.body as Record<string, unknown>;
  };
  const balance = async (pk: string) => (await get(`/svc/workers/${pk}/earnings`)).balance_credits as number;
  /** The registry as GET /svc/workers shows it, without the gateway's own local worker. */
  const workersListed = async () =>
    ((await get('/svc/workers')).workers as { pk: string }[]).filter((w) => w.pk !== gw.node.publicKey);
  const recordsListed = async () => {
    await gw.writer.flush();
    return ((await get('/store/query?limit=1000')).records as ProofRecord[]).map((r) => [r.id, r.record_hash]);
  };
  const proofState = async (id: string) => {
    const res = await gw.get(`/store/proof/${id}`);
    if (res.status === 404) return 'unknown';
    const body = res.body as { pending?: boolean; seal: Seal | null };
    return { pending: body.pending ?? false, seal: body.seal?.seal_hash ?? null };
  };
  const pushAs = async (key: KeyPair, path: '/store/sync' | '/store/epochs', items: unknown[]) => {
    const body = path === '/store/sync' ? { records: items, seals } : { seals: items };
    const signed = sign(key, { ...body, created_at: iso(now) });
    const res = await send(path, signed.body, signed.signature);
    assert.equal(res.status, 200, res.text);
  };
  const registration = (variant: 0 | 1): Body => ({
    h3_cell: '861e8050fffffff',
    models: variant === 0 ? ['tinyllama', WORKER_MODEL] : ['tinyllama'],
    tools: ['web-search'],
    hardware: { platform: 'linux-x64', gpu: 'NVIDIA GeForce RTX 3060', vram_gb: 12, ram_gb: 32, cores: 12 },
    hardware_tier: 2,
    relay: false,
    version: variant === 0 ? '0.1.0' : '0.2.0',
    created_at: iso(now),
  });

  const compute: SignedRoute = {
    name: 'POST /v1/compute',
    path: () => '/v1/compute',
    setup: async () => {},
    body: (variant) => inferenceJob(variant === 0 ? 'three parks in Rome' : 'two fountains', { created_at: iso(now) }),
    topLevel: (body) => {
      body.budget_credits = 0.05;
    },
    nested: (body) => {
      ((body.steps as Body[])[0]!.messages as Body[])[0]!.content = 'the password of the admin';
    },
    observe: async () => ({
      jobs: ((await get('/v1/compute/recent')).jobs as { job_id: string }[]).map((j) => j.job_id),
      requester: await balance(alice.publicKey),
      node: await balance(gw.node.publicKey),
      records: await recordsListed(),
    }),
    accepted: 200,
  };

  const register: SignedRoute = {
    name: 'POST /svc/workers/register',
    path: () => '/svc/workers/register',
    setup: async () => {},
    body: registration,
    topLevel: (body) => {
      body.h3_cell = '861f1d48fffffff';
    },
    nested: (body) => {
      (body.hardware as Body).gpu = 'NVIDIA H100';
    },
    observe: workersListed,
    accepted: 201,
  };

  const heartbeat: SignedRoute = {
    name: 'POST /svc/workers/heartbeat',
    path: () => '/svc/workers/heartbeat',
    setup: async () => {
      const signed = sign(alice, registration(0));
      assert.equal((await sendSigned(register, signed)).status, 201);
      now += 20_000; // an accepted heartbeat now moves last_seen
    },
    body: (variant) => ({ seq: variant + 1, created_at: iso(now) }),
    topLevel: (body) => {
      body.seq = 1000;
    },
    observe: workersListed,
    accepted: 200,
  };

  const leave: SignedRoute = {
    name: 'POST /svc/workers/leave',
    path: () => '/svc/workers/leave',
    setup: async () => {
      const signed = sign(alice, registration(0));
      assert.equal((await sendSigned(register, signed)).status, 201);
    },
    body: (variant) => ({ seq: variant + 1, created_at: iso(now) }),
    topLevel: (body) => {
      body.seq = 1000;
    },
    observe: workersListed,
    accepted: 200,
  };

  const sync: SignedRoute = {
    name: 'POST /store/sync',
    path: () => '/store/sync',
    setup: async () => {},
    body: (variant) => ({ records: [records[variant]], seals, created_at: iso(now) }),
    topLevel: (body) => {
      body.created_at = iso(now - 1000);
    },
    nested: (body) => {
      ((body.records as Body[])[0]!.payload as Body).text = 'rewritten';
    },
    observe: recordsListed,
    accepted: 200,
  };

  const epochs: SignedRoute = {
    name: 'POST /store/epochs',
    path: () => '/store/epochs',
    setup: () => pushAs(alice, '/store/sync', records),
    body: (variant) => ({ seals: seals.slice(0, variant + 1), created_at: iso(now) }),
    topLevel: (body) => {
      body.nonce = 'another';
    },
    nested: (body) => {
      (body.seals as Body[])[0]!.merkle_root = 'ab'.repeat(32);
    },
    observe: async () => [await proofState('rec-a'), await proofState('rec-b')],
    accepted: 200,
  };

  const purchase: SignedRoute = {
    name: 'POST /store/proof/:record_id',
    path: (body) => `/store/proof/${encodeURIComponent(String(body.record_id))}`,
    setup: async () => {
      await pushAs(writer, '/store/sync', records);
      await pushAs(writer, '/store/epochs', seals);
    },
    body: (variant) => ({ record_id: records[variant]!.id, created_at: iso(now) }),
    // The path follows the body (the record bought is named in both), so only the signature can tell.
    topLevel: (body) => {
      body.record_id = 'rec-b';
    },
    observe: async () => ({ buyer: await balance(alice.publicKey), platform: await balance(gw.node.publicKey) }),
    accepted: 200,
  };

  const DEVICE_CELL = '891e8050003ffff';
  const readingsListed = async () =>
    ((await get(`/v1/telemetry?cell=${DEVICE_CELL}`)).features as { id: string; properties: { result: number } }[]).map(
      (f) => [f.id, f.properties.result],
    );
  const telemetry: SignedRoute = {
    name: 'POST /v1/telemetry',
    path: () => '/v1/telemetry',
    setup: async () => {},
    body: (variant) => ({
      h3_cell: DEVICE_CELL,
      readings: [
        signedReading(alice, DEVICE_CELL, {
          quantity: 'pm2_5',
          value: 12 + variant,
          unit: 'ug/m3',
          observed_at: iso(now + variant * 1000),
        }),
      ],
      created_at: iso(now),
    }),
    topLevel: (body) => {
      body.h3_cell = '891e8050007ffff';
    },
    nested: (body) => {
      (body.readings as Body[])[0]!.value = 99;
    },
    observe: readingsListed,
    accepted: 200,
  };

  // A blob's id is the SHA-256 of its text: the path follows the body, so only the signature can tell.
  const blobId = (body: Body) => createHash('sha256').update(String(body.text), 'utf8').digest('hex');
  const blobTexts = ['"blob zero"', '"blob one"'];
  const blobStep = { job_id: randomUUID(), step_id: 'big' };
  const blob: SignedRoute = {
    name: 'PUT /store/blobs/:sha256',
    method: 'PUT',
    path: (body) => `/store/blobs/${blobId(body)}`,
    setup: async () => {
      const signed = sign(alice, registration(0));
      assert.equal((await sendSigned(register, signed)).status, 201);
      // The step the worker uploads for: a running job's (docs/protocol.md §11.4); claiming it again changes nothing.
      await gw.jobs.claim({
        version: 1,
        job_id: blobStep.job_id,
        status: 'running',
        requester_pk: mallory.publicKey,
        h3_cell: DEVICE_CELL,
        epoch: epochAt(now),
        step_types: ['inference'],
        request_hash: '0'.repeat(64),
        created_at: iso(now),
        updated_at: iso(now),
        response: null,
        request: { body: { steps: [{ id: blobStep.step_id, type: 'inference' }] }, delegation_chain: null },
      });
    },
    body: (variant) => ({ text: blobTexts[variant], ...blobStep, created_at: iso(now) }),
    topLevel: (body) => {
      body.text = '"another blob"';
    },
    // No public GET lists blobs (a job's answer resolves them): the store port shows what is held.
    observe: async () => [...(await gw.blobs.get([...blobTexts, '"another blob"'].map((text) => blobId({ text }))))],
    accepted: 200,
  };

  const routes = [compute, register, heartbeat, leave, sync, epochs, purchase, telemetry, blob];

  it('covers every signed route of the gateway (read from /openapi.json)', async () => {
    const doc = (await gw.get('/openapi.json')).body as {
      paths: Record<string, Record<string, { security?: Record<string, unknown>[] }>>;
    };
    const signed: string[] = [];
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        if (operation.security?.some((s) => 'signature' in s)) signed.push(`${method.toUpperCase()} ${path}`);
      }
    }
    const ours = routes.map((r) => r.name.replace(/:(\w+)/g, '{$1}'));
    assert.deepEqual([...signed].sort(), [...ours].sort());
  });

  for (const route of routes) {
    describe(route.name, () => {
      beforeEach(() => route.setup());

      for (const forgery of forgeries(route)) {
        it(`${forgery.name}: 401 invalid_signature, and no effect`, async () => {
          const valid = sign(alice, route.body(0));
          const other = sign(alice, route.body(1));
          const { body, header } = forgery.build(valid, other, mallory);
          const before = await route.observe();
          const res = await send(route.path(body), body, header, route.method);
          assertRefused(res, 'invalid_signature');
          assert.deepEqual(await route.observe(), before, 'the refused request left a trace');
          // The untampered request is accepted and shows: the observation above can see an effect.
          const accepted = await sendSigned(route, valid);
          assert.equal(accepted.status, route.accepted, accepted.text);
          assert.notDeepEqual(await route.observe(), before, 'the accepted request shows in the public GETs');
        });
      }

      it(`a created_at more than 5 minutes from the server clock: 401 stale_request, and no effect`, async () => {
        const before = await route.observe();
        for (const skew of [-6 * MINUTE, 6 * MINUTE]) {
          const stale = sign(alice, { ...route.body(0), created_at: iso(now + skew) });
          assertRefused(await sendSigned(route, stale), 'stale_request');
        }
        assert.deepEqual(await route.observe(), before);
      });
    });
  }

  describe('(e) exact replays', () => {
    it('PUT /store/blobs/:sha256: the same blob, stored once (content addressed); stale after 5 minutes', async () => {
      await blob.setup();
      const signed = sign(alice, blob.body(0));
      const first = await sendSigned(blob, signed);
      assert.equal(first.status, 200, first.text);
      const after = await blob.observe();
      now += 4 * MINUTE;
      const replay = await sendSigned(blob, signed);
      assert.equal(replay.status, 200, replay.text);
      assert.deepEqual(replay.body, first.body);
      assert.deepEqual(await blob.observe(), after);
      now += 2 * MINUTE;
      assertRefused(await sendSigned(blob, signed), 'stale_request');
    });

    it('POST /v1/telemetry: the same readings, stored once (ids from device, quantity and instant)', async () => {
      const signed = sign(alice, telemetry.body(0));
      const first = await sendSigned(telemetry, signed);
      assert.equal(first.status, 200, first.text);
      const after = await telemetry.observe();
      const replay = await sendSigned(telemetry, signed);
      assert.equal(replay.status, 200, replay.text);
      assert.equal((replay.body as { accepted: { duplicate: boolean }[] }).accepted[0]!.duplicate, true);
      assert.deepEqual(await telemetry.observe(), after, 'no second record');
    });

    it('POST /v1/compute: the same job (id from the signature), run and charged once; stale after 5 minutes', async () => {
      const signed = sign(alice, compute.body(0));
      const first = await sendSigned(compute, signed);
      assert.equal(first.status, 200, first.text);
      const job = first.body as { job_id: string; settlement: { total_credits: number } };
      assert.equal(job.job_id, jobIdFromSignature(signed.signature));
      const after = await compute.observe();
      const calls = runtime.chats().length;

      now += 4 * MINUTE;
      const replay = await sendSigned(compute, signed);
      assert.equal(replay.status, 200, replay.text);
      assert.deepEqual(replay.body, first.body, 'the stored job, as first answered');
      assert.equal(runtime.chats().length, calls, 'the replay ran nothing');
      assert.deepEqual(await compute.observe(), after, 'no second job, charge or record');
      assert.equal((after as { requester: number }).requester, -job.settlement.total_credits);

      now += 2 * MINUTE; // created_at is now 6 minutes old
      assertRefused(await sendSigned(compute, signed), 'stale_request');
      assert.deepEqual(await compute.observe(), after);
    });

    it('POST /v1/compute without created_at: a replay a day later is still the same job, never charged again', async () => {
      const { created_at: _none, ...undated } = compute.body(0);
      const signed = sign(alice, undated);
      const first = await sendSigned(compute, signed);
      assert.equal(first.status, 200, first.text);
      const once = await compute.observe();
      // A nonce makes a fresh job: that is how a client asks for a second run.
      const fresh = sign(alice, { ...undated, nonce: '2' });
      const second = await sendSigned(compute, fresh);
      assert.equal(second.status, 200, second.text);
      assert.notEqual((second.body as { job_id: string }).job_id, (first.body as { job_id: string }).job_id);
      const after = await compute.observe();
      assert.notDeepEqual(after, once);
      now += DAY;
      for (const [request, answered] of [
        [signed, first],
        [fresh, second],
      ] as const) {
        const replay = await sendSigned(compute, request);
        assert.equal(replay.status, 200, replay.text);
        assert.deepEqual(replay.body, answered.body);
      }
      assert.deepEqual(await compute.observe(), after);
    });

    it('POST /svc/workers/register: idempotent within 5 minutes (200, same declaration), stale after', async () => {
      const signed = sign(alice, registration(0));
      const first = await sendSigned(register, signed);
      assert.equal(first.status, 201, first.text);
      const [listed] = (await workersListed()) as Body[];
      now += 60_000;
      const replay = await sendSigned(register, signed);
      assert.equal(replay.status, 200, replay.text);
      const [again] = (await workersListed()) as Body[];
      const { last_seen: _a, ...declared } = listed!;
      const { last_seen: _b, ...redeclared } = again!;
      assert.deepEqual(redeclared, declared, 'the same declaration, trust and counters');
      now += 5 * MINUTE;
      const before = await workersListed();
      assertRefused(await sendSigned(register, signed), 'stale_request');
      assert.deepEqual(await workersListed(), before);
    });

    it('POST /svc/workers/register: an older registration replayed within its 5 minutes cannot roll the worker back', async () => {
      const old = sign(alice, registration(0)); // v0.1.0
      assert.equal((await sendSigned(register, old)).status, 201);
      now += 60_000;
      const upgraded = sign(alice, registration(1)); // v0.2.0, signed a minute later
      assert.equal((await sendSigned(register, upgraded)).status, 200);
      const before = await workersListed();
      now += 20_000; // the captured v0.1.0 is 80 s old: fresh enough for gate 1 (the worker is still online)
      assertRefused(await sendSigned(register, old), 'stale_request');
      assert.deepEqual(await workersListed(), before);
      assert.equal(((before as Body[])[0] as { version: string }).version, '0.2.0');
    });

    it('POST /svc/workers/heartbeat: a replayed beat (seq not above the last) is 401 stale_request', async () => {
      await heartbeat.setup();
      const beat = sign(alice, heartbeat.body(0));
      assert.equal((await sendSigned(heartbeat, beat)).status, 200);
      const before = await workersListed();
      now += 20_000;
      assertRefused(await sendSigned(heartbeat, beat), 'stale_request');
      assert.deepEqual(await workersListed(), before, 'last_seen did not move');
    });

    it('POST /svc/workers/leave: a replayed leave (the worker back since) is 401 stale_request, still online', async () => {
      await leave.setup();
      const left = sign(alice, leave.body(0));
      assert.equal((await sendSigned(leave, left)).status, 200);
      assert.equal(((await workersListed()) as unknown as { online: boolean }[])[0]?.online, false);
      now += 1_000;
      assert.equal((await sendSigned(heartbeat, sign(alice, heartbeat.body(1)))).status, 200);
      const before = await workersListed();
      assert.equal((before as unknown as { online: boolean }[])[0]?.online, true, 'back after a newer heartbeat');
      assertRefused(await sendSigned(leave, left), 'stale_request');
      assert.deepEqual(await workersListed(), before, 'the replay took nobody offline');
    });

    it('POST /store/sync: a replay lists the records as duplicates and stores nothing new; stale after 5 minutes', async () => {
      const signed = sign(alice, { records, seals, created_at: iso(now) });
      const first = await sendSigned(sync, signed);
      assert.equal(first.status, 200, first.text);
      const after = await recordsListed();
      assert.deepEqual(after.map(([id]) => id).sort(), ['rec-a', 'rec-b']);
      const replay = await sendSigned(sync, signed);
      assert.equal(replay.status, 200);
      assert.deepEqual(replay.body, { accepted: [], duplicates: ['rec-a', 'rec-b'], rejected: [] });
      assert.deepEqual(await recordsListed(), after);
      now += 6 * MINUTE;
      assertRefused(await sendSigned(sync, signed), 'stale_request');
    });

    it('POST /store/epochs: a replay lists the seals as duplicates; stale after 5 minutes', async () => {
      await epochs.setup();
      const signed = sign(alice, { seals, created_at: iso(now) });
      assert.equal((await sendSigned(epochs, signed)).status, 200);
      const after = await epochs.observe();
      const replay = await sendSigned(epochs, signed);
      assert.equal(replay.status, 200);
      assert.deepEqual((replay.body as { duplicates: string[] }).duplicates, [
        `${writer.publicKey}:${EPOCH}`,
        `${writer.publicKey}:${EPOCH + 1}`,
      ]);
      assert.deepEqual(await epochs.observe(), after);
      now += 6 * MINUTE;
      assertRefused(await sendSigned(epochs, signed), 'stale_request');
    });

    it('POST /store/proof/:record_id: a replay answers the same charge and is not charged again; stale after', async () => {
      await purchase.setup();
      const signed = sign(alice, purchase.body(0));
      const first = await sendSigned(purchase, signed);
      assert.equal(first.status, 200, first.text);
      const charge = (first.body as { charge: { credits: number; entry_ids: string[] } }).charge;
      assert.equal(charge.credits, 0.0001);
      const after = await purchase.observe();
      assert.deepEqual(after, { buyer: -0.0001, platform: 0.0001 });
      now += 4 * MINUTE;
      const replay = await sendSigned(purchase, signed);
      assert.equal(replay.status, 200);
      assert.deepEqual((replay.body as { charge: unknown }).charge, charge);
      assert.deepEqual(await purchase.observe(), after);
      now += 2 * MINUTE;
      assertRefused(await sendSigned(purchase, signed), 'stale_request');
      assert.deepEqual(await purchase.observe(), after);
    });
  });
});

describe('governance POST /token (signed by the agent): tampering, key swaps and replays', () => {
  let now: number;
  let db: SqliteDatabase;
  let store: AuditStore;
  let server: GovernanceServer;
  let url: string;
  let agent: KeyPair;
  let mallory: KeyPair;
  let chain: DelegationCertificate[];

  const chainOf = (agentPk: string, human = generateKeyPair()): DelegationCertificate[] => [
    issueCertificate(human.secretKey, {
      agent_pk: agentPk,
      h3_cells: [DEFAULT_PERCEPTION_CELL],
      facets: ['perception'],
      not_before: iso(now - DAY),
      not_after: iso(now + DAY),
      max_depth: 0,
    }),
  ];
  const tokenBody = (extra: Body = {}): Body => ({
    agent_pk: agent.publicKey,
    delegation_chain: chain,
    created_at: iso(now),
    ttl_seconds: 600,
    ...extra,
  });
  const signAs = (key: KeyPair, body: Body) => signMessage(key.secretKey, requestSigningMessage(body));
  const post = async (body: Body, header: string): Promise<TestResponse> => {
    const res = await fetch(`${url}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-idn-signature': header },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: JSON.parse(text) as unknown, text };
  };
  const refusedWithoutToken = (res: TestResponse, code: ErrorCode) => {
    assertRefused(res, code);
    assert.equal((res.body as Body).token, undefined);
  };

  beforeEach(async () => {
    now = T0;
    db = openSqlite(':memory:');
    store = createSqliteAuditStore(db);
    agent = generateKeyPair();
    mallory = generateKeyPair();
    chain = chainOf(agent.publicKey);
    server = createGovernanceServer({
      store,
      key: generateKeyPair(),
      chain: null,
      complianceUrl: 'http://127.0.0.1:9',
      clock: () => now,
    });
    url = (await server.listen(0, '127.0.0.1')).url;
  });
  afterEach(async () => {
    await server.close();
    await store.close();
    db.close();
  });

  it('the untampered request gets a token (control)', async () => {
    const body = tokenBody();
    const res = await post(body, signAs(agent, body));
    assert.equal(res.status, 200, res.text);
    assert.equal((res.body as { claims: { idn_agent_pk: string } }).claims.idn_agent_pk, agent.publicKey);
  });

  it('(a) a top-level field changed after signing: 401 invalid_signature', async () => {
    const body = tokenBody();
    const signature = signAs(agent, body);
    refusedWithoutToken(await post({ ...body, ttl_seconds: 3600 }, signature), 'invalid_signature');
    refusedWithoutToken(await post({ ...body, created_at: iso(now + 1000) }, signature), 'invalid_signature');
  });

  it('(a) a nested field (inside the delegation chain) changed after signing: 401 invalid_signature', async () => {
    const body = tokenBody();
    const signature = signAs(agent, body);
    const tampered = structuredClone(body);
    (tampered.delegation_chain as DelegationCertificate[])[0]!.h3_cells = ['801ffffffffffff'];
    refusedWithoutToken(await post(tampered, signature), 'invalid_signature');
    // Swapping in another agent's valid chain is a body change too.
    refusedWithoutToken(
      await post({ ...body, delegation_chain: chainOf(agent.publicKey) }, signature),
      'invalid_signature',
    );
  });

  it('(b) agent_pk swapped to another key (with its own valid chain), signature kept: 401 invalid_signature', async () => {
    const body = tokenBody();
    const signature = signAs(agent, body);
    refusedWithoutToken(await post({ ...body, agent_pk: mallory.publicKey }, signature), 'invalid_signature');
    refusedWithoutToken(
      await post({ ...body, agent_pk: mallory.publicKey, delegation_chain: chainOf(mallory.publicKey) }, signature),
      'invalid_signature',
    );
  });

  it('(c) re-signed by another key, agent_pk kept: 401 invalid_signature', async () => {
    const body = tokenBody();
    refusedWithoutToken(await post(body, signAs(mallory, body)), 'invalid_signature');
    const withField = { ...body, signature: signAs(mallory, body) };
    refusedWithoutToken(await post(withField, withField.signature), 'invalid_signature');
  });

  it("(d) one request's signature with another request's body: 401 invalid_signature", async () => {
    const one = tokenBody({ nonce: 'one' });
    const two = tokenBody({ nonce: 'two', ttl_seconds: 3600 });
    const signatureOne = signAs(agent, one);
    const signatureTwo = signAs(agent, two);
    refusedWithoutToken(await post(two, signatureOne), 'invalid_signature');
    // The body's own signature field must agree with the header.
    refusedWithoutToken(await post({ ...two, signature: signatureTwo }, signatureOne), 'invalid_signature');
  });

  it('(e) an exact replay within 5 minutes gets the same token back (one request, one token); stale after', async () => {
    const body = tokenBody();
    const signature = signAs(agent, body);
    const first = await post(body, signature);
    assert.equal(first.status, 200, first.text);
    now += 4 * MINUTE;
    const replay = await post(body, signature);
    assert.equal(replay.status, 200, replay.text);
    assert.deepEqual(replay.body, first.body, 'the same token, jti and claims: no second token');
    now += 2 * MINUTE; // created_at is now 6 minutes old
    refusedWithoutToken(await post(body, signature), 'stale_request');
    for (const skew of [-6 * MINUTE, 6 * MINUTE]) {
      const stale = tokenBody({ created_at: iso(now + skew) });
      refusedWithoutToken(await post(stale, signAs(agent, stale)), 'stale_request');
    }
  });
});
