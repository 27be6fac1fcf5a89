import assert from 'node:assert/strict';
import { DEFAULT_EPOCH_GENESIS_MS } from '../../core/epoch.js';
import { generateKeyPair } from '../../core/identity.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteRateLimitStore } from '../../store/sqlite/rate-limit-store.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { certFor, certHeader, inferenceJob, signJob } from '../helpers/jobs.js';

const alice = generateKeyPair();
const human = generateKeyPair();

/**
 * A request that passes all four gates becomes a job; with no runtime, backbone or upstream configured an
 * inference job fails with 503 no_workers, a tile or imagery job with 502 upstream_unavailable, both naming the job.
 */
const PASSED_ALL_GATES = 503;
const UPSTREAM_JOB_RAN = 502;

describe('router gates over HTTP', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.close());

  describe('gate 1: signature', () => {
    it('accepts a correctly signed request', async () => {
      const { body, headers } = signJob(alice, inferenceJob('three parks in Rome'));
      const res = await gw.post('/v1/compute', body, headers);
      assert.equal(res.status, PASSED_ALL_GATES);
      assert.equal((res.body as { error: string }).error, 'no_workers');
    });

    it('rejects a request without X-Idn-Signature before anything else runs', async () => {
      // Also carries an invalid cell and a cycle: gate 1 must answer first.
      const { body } = signJob(alice, {
        h3_cell: 'nonsense',
        steps: [
          { id: 'a', type: 'inference', depends_on: 'b' },
          { id: 'b', type: 'inference', depends_on: 'a' },
        ],
      });
      const res = await gw.post('/v1/compute', body);
      assert.equal(res.status, 401);
      assert.deepEqual(res.body, { error: 'signature_required', detail: 'X-Idn-Signature header is required' });
    });

    it('rejects a request whose nested field changed after signing', async () => {
      const signed = signJob(alice, inferenceJob('three parks in Rome'));
      (signed.body.steps[0] as { messages: Array<{ content: string }> }).messages[0]!.content = 'something else';
      const res = await gw.post('/v1/compute', signed.body, signed.headers);
      assert.equal(res.status, 401);
      assert.equal((res.body as { error: string }).error, 'invalid_signature');
    });

    it('rejects a header that differs from the body signature', async () => {
      const a = signJob(alice, inferenceJob('one'));
      const b = signJob(alice, inferenceJob('two'));
      const res = await gw.post('/v1/compute', a.body, b.headers);
      assert.equal(res.status, 401);
      assert.match((res.body as { detail: string }).detail, /differ/);
    });

    it('rejects a signature by another key than requester_pk', async () => {
      const mallory = generateKeyPair();
      const signed = signJob(mallory, inferenceJob('hi'));
      const forged = { ...signed.body, requester_pk: alice.publicKey };
      const res = await gw.post('/v1/compute', forged, signed.headers);
      assert.equal(res.status, 401);
      assert.equal((res.body as { error: string }).error, 'invalid_signature');
    });

    it('rejects a header that is not a hex signature', async () => {
      const { body } = signJob(alice, inferenceJob('hi'));
      const res = await gw.post('/v1/compute', body, { 'x-idn-signature': 'not-hex' });
      assert.equal(res.status, 401);
      assert.equal((res.body as { error: string }).error, 'invalid_signature');
    });

    it('answers 400 invalid_public_key for a malformed or small-order requester_pk', async () => {
      for (const pk of ['abc', '00'.repeat(32), '01' + '00'.repeat(31), 'ZZ'.repeat(32)]) {
        const { body, headers } = signJob(alice, inferenceJob('hi'));
        const res = await gw.post('/v1/compute', { ...body, requester_pk: pk }, headers);
        assert.equal(res.status, 400, pk);
        assert.equal((res.body as { error: string }).error, 'invalid_public_key', pk);
      }
    });

    it('accepts a fresh created_at and rejects one more than 5 minutes off', async () => {
      const fresh = signJob(alice, inferenceJob('hi', { created_at: new Date().toISOString() }));
      assert.equal((await gw.post('/v1/compute', fresh.body, fresh.headers)).status, PASSED_ALL_GATES);
      const stale = signJob(alice, inferenceJob('hi', { created_at: new Date(Date.now() - 6 * 60_000).toISOString() }));
      const res = await gw.post('/v1/compute', stale.body, stale.headers);
      assert.equal(res.status, 401);
      assert.equal((res.body as { error: string }).error, 'stale_request');
    });
  });

  describe('gate 2: jurisdiction', () => {
    it('rejects a malformed cell anywhere in the request with invalid_cell', async () => {
      const cases: Array<[Record<string, unknown>, Record<string, string>]> = [
        [inferenceJob('hi', { h3_cell: 'not-a-cell' }), {}],
        [inferenceJob('hi', { h3_cell: '861E8050FFFFFFF' }), {}],
        [
          inferenceJob('hi', {
            steps: [{ id: 't', type: 'tile_render', center_cell: '8f2830828052d2', zoom: 12 }],
          }),
          {},
        ],
        [
          inferenceJob('hi', {
            steps: [{ id: 'i', type: 'image_process', operation: 'ndvi', context: { h3_cell: 'ffffffffffffffff' } }],
          }),
          {},
        ],
        [inferenceJob('hi'), { 'x-svc-h3-cell': 'zz' }],
      ];
      for (const [job, extra] of cases) {
        const { body, headers } = signJob(alice, job);
        const res = await gw.post('/v1/compute', body, { ...headers, ...extra });
        assert.equal(res.status, 400, JSON.stringify(job));
        assert.equal((res.body as { error: string }).error, 'invalid_cell');
      }
    });

    it('checks cells before plans: an invalid cell wins over a cycle', async () => {
      const { body, headers } = signJob(alice, {
        h3_cell: 'bad',
        steps: [
          { id: 'a', type: 'inference', depends_on: 'b' },
          { id: 'b', type: 'inference', depends_on: 'a' },
        ],
      });
      assert.equal(((await gw.post('/v1/compute', body, headers)).body as { error: string }).error, 'invalid_cell');
    });

    it('accepts known jurisdiction codes and tiers, rejects unknown ones', async () => {
      const { body, headers } = signJob(alice, inferenceJob('hi'));
      const ok = await gw.post('/v1/compute', body, {
        ...headers,
        'x-svc-jurisdiction': 'EU',
        'x-svc-min-tier': 'explorer',
      });
      assert.equal(ok.status, PASSED_ALL_GATES);
      const badCode = await gw.post('/v1/compute', body, { ...headers, 'x-svc-jurisdiction': 'Atlantis' });
      assert.equal(badCode.status, 400);
      assert.equal((badCode.body as { error: string }).error, 'invalid_jurisdiction');
      const badTier = await gw.post('/v1/compute', body, { ...headers, 'x-svc-min-tier': 'overlord' });
      assert.equal(badTier.status, 400);
      assert.equal((badTier.body as { error: string }).error, 'invalid_tier');
    });
  });

  describe('gate 3: delegation', () => {
    const post = (job: Record<string, unknown>, cert: string) => {
      const { body, headers } = signJob(alice, job);
      return gw.post('/v1/compute', body, { ...headers, 'x-svc-delegation-cert': cert });
    };
    const reason = (res: { body: unknown }) => res.body as { error: string; detail: string };

    it('accepts a certificate from a human to the requester that covers the job', async () => {
      const res = await post(inferenceJob('hi'), certHeader(certFor(human, alice.publicKey)));
      assert.equal(res.status, PASSED_ALL_GATES);
    });

    it('accepts a two-link chain human → agent → requester with narrowed rights', async () => {
      const agent = generateKeyPair();
      const now = Date.now();
      const root = certFor(human, agent.publicKey, { max_depth: 1 }, now);
      const leaf = certFor(agent, alice.publicKey, { h3_cells: ['861e8050fffffff'], facets: ['inference'] }, now);
      assert.equal((await post(inferenceJob('hi'), certHeader([root, leaf]))).status, PASSED_ALL_GATES);
    });

    it('rejects a certificate for another agent', async () => {
      const res = await post(inferenceJob('hi'), certHeader(certFor(human, generateKeyPair().publicKey)));
      assert.equal(res.status, 403);
      assert.equal(reason(res).error, 'delegation_invalid');
    });

    it('rejects an expired certificate', async () => {
      const old = Date.now() - 10 * 24 * 3_600_000;
      const res = await post(inferenceJob('hi'), certHeader(certFor(human, alice.publicKey, {}, old)));
      assert.equal(res.status, 403);
      assert.equal(reason(res).error, 'delegation_invalid');
    });

    it('rejects a job cell outside the certificate (by H3 containment)', async () => {
      // Berlin, resolution 6: not inside the Rome resolution-5 cell.
      const res = await post(
        inferenceJob('hi', { h3_cell: '861f1d48fffffff' }),
        certHeader(certFor(human, alice.publicKey)),
      );
      assert.equal(res.status, 403);
      assert.equal(reason(res).error, 'delegation_invalid');
    });

    it('rejects a step type the certificate does not grant', async () => {
      const cert = certHeader(certFor(human, alice.publicKey, { facets: ['tile_render'] }));
      const res = await post(inferenceJob('hi'), cert);
      assert.equal(res.status, 403);
      assert.equal(reason(res).error, 'delegation_invalid');
    });

    it('rejects a tool the certificate denies', async () => {
      const cert = certHeader(certFor(human, alice.publicKey, { constraints: { denied_tools: ['web-search'] } }));
      const job = inferenceJob('hi', {
        steps: [{ id: 's', type: 'inference', tools: ['web-search'], messages: [{ role: 'user', content: 'q' }] }],
      });
      const res = await post(job, cert);
      assert.equal(res.status, 403);
      assert.equal(reason(res).error, 'delegation_invalid');
    });

    it('rejects a header that is not base64 JSON', async () => {
      const res = await post(inferenceJob('hi'), '%%%not base64%%%');
      assert.equal(res.status, 403);
      assert.equal(reason(res).error, 'delegation_invalid');
    });

    it('checks delegation before plans: a bad certificate wins over a cycle', async () => {
      const job = {
        steps: [
          { id: 'a', type: 'inference', depends_on: 'b' },
          { id: 'b', type: 'inference', depends_on: 'a' },
        ],
      };
      assert.equal(reason(await post(job, 'e30=')).error, 'delegation_invalid');
    });

    it('enforces max_ops_per_hour per agent with 429 and retry-after', async () => {
      const bob = generateKeyPair();
      const cert = certHeader(certFor(human, bob.publicKey, { constraints: { max_ops_per_hour: 2 } }));
      const send = (n: number) => {
        const { body, headers } = signJob(bob, inferenceJob(`q${n}`));
        return gw.post('/v1/compute', body, { ...headers, 'x-svc-delegation-cert': cert });
      };
      assert.equal((await send(1)).status, PASSED_ALL_GATES);
      assert.equal((await send(2)).status, PASSED_ALL_GATES);
      const limited = await send(3);
      assert.equal(limited.status, 429);
      assert.equal(reason(limited).error, 'rate_limit');
      const retryAfter = Number(limited.headers.get('retry-after'));
      assert.ok(retryAfter >= 1 && retryAfter <= 3600, `retry-after ${retryAfter}`);
    });

    it('spends max_ops_per_hour only on signed requests, once per request: replays and borrowed certificates are free', async () => {
      const carol = generateKeyPair();
      const cert = certHeader(certFor(human, carol.publicKey, { constraints: { max_ops_per_hour: 2 } }));
      // Anyone holding carol's (public) certificate sends it on unsigned requests: checked, never counted.
      for (let i = 0; i < 5; i++) {
        assert.equal((await gw.get('/v1/tools', { 'x-svc-delegation-cert': cert })).status, 200);
      }
      const first = signJob(carol, inferenceJob('one'));
      const send = (job: ReturnType<typeof signJob>) =>
        gw.post('/v1/compute', job.body, { ...job.headers, 'x-svc-delegation-cert': cert });
      assert.equal((await send(first)).status, PASSED_ALL_GATES);
      // The same signed request three more times (a retry after a lost answer, or a captured replay): one op.
      for (let i = 0; i < 3; i++) assert.equal((await send(first)).status, PASSED_ALL_GATES);
      assert.equal((await send(signJob(carol, inferenceJob('two')))).status, PASSED_ALL_GATES);
      assert.equal((await send(signJob(carol, inferenceJob('three')))).status, 429);
    });

    it('spends one op per signed request for the certificate lifetime: replays over two gateways and an hour boundary are free', async () => {
      // Two gateway processes share one store; both read the same injected clock, one minute before an hour ends.
      const HOUR = 3_600_000;
      let now = DEFAULT_EPOCH_GENESIS_MS + 500_000 * HOUR + 59 * 60_000;
      const db = openSqlite(':memory:');
      const rateLimits = createSqliteRateLimitStore(db);
      const gateways = [
        await startGateway({ clock: () => now, rateLimits }),
        await startGateway({ clock: () => now, rateLimits }),
      ];
      try {
        const dave = generateKeyPair();
        const cert = certHeader(certFor(human, dave.publicKey, { constraints: { max_ops_per_hour: 2 } }, now));
        const send = (gw: TestGateway, job: ReturnType<typeof signJob>) =>
          gw.post('/v1/compute', job.body, { ...job.headers, 'x-svc-delegation-cert': cert });
        // No created_at: valid for as long as the certificate, and public in the job's receipt.
        const replayed = signJob(dave, inferenceJob('replayed'));
        for (const gw of [...gateways, ...gateways]) assert.equal((await send(gw, replayed)).status, PASSED_ALL_GATES);
        assert.equal((await send(gateways[0]!, signJob(dave, inferenceJob('second')))).status, PASSED_ALL_GATES);
        assert.equal((await send(gateways[1]!, signJob(dave, inferenceJob('third')))).status, 429);

        now += 2 * 60_000; // the next hour: a fresh budget of 2, which the replays do not touch
        for (const gw of [...gateways, ...gateways]) assert.equal((await send(gw, replayed)).status, PASSED_ALL_GATES);
        assert.equal((await send(gateways[1]!, signJob(dave, inferenceJob('fourth')))).status, PASSED_ALL_GATES);
        assert.equal((await send(gateways[0]!, signJob(dave, inferenceJob('fifth')))).status, PASSED_ALL_GATES);
        const limited = await send(gateways[1]!, signJob(dave, inferenceJob('sixth')));
        assert.equal(limited.status, 429);
        assert.equal(reason(limited).error, 'rate_limit');
      } finally {
        for (const gw of gateways) await gw.close();
        db.close();
      }
    });

    it('counts a request refused for max_ops_per_hour when it is sent again in a later hour', async () => {
      const HOUR = 3_600_000;
      let now = DEFAULT_EPOCH_GENESIS_MS + 500_000 * HOUR + 30 * 60_000;
      const clocked = await startGateway({ clock: () => now });
      try {
        const erin = generateKeyPair();
        const cert = certHeader(certFor(human, erin.publicKey, { constraints: { max_ops_per_hour: 1 } }, now));
        const send = (job: ReturnType<typeof signJob>) =>
          clocked.post('/v1/compute', job.body, { ...job.headers, 'x-svc-delegation-cert': cert });
        const refused = signJob(erin, inferenceJob('too many'));
        assert.equal((await send(signJob(erin, inferenceJob('first')))).status, PASSED_ALL_GATES);
        assert.equal((await send(refused)).status, 429);
        now += HOUR;
        assert.equal((await send(refused)).status, PASSED_ALL_GATES, 'counted now, in its own hour');
        assert.equal((await send(signJob(erin, inferenceJob('another')))).status, 429);
      } finally {
        await clocked.close();
      }
    });

    it('requires a certificate when REQUIRE_DELEGATION is on', async () => {
      const strict = await startGateway({ config: { requireDelegation: true } });
      try {
        const { body, headers } = signJob(alice, inferenceJob('hi'));
        const res = await strict.post('/v1/compute', body, headers);
        assert.equal(res.status, 403);
        assert.equal(reason(res).error, 'delegation_required');
        const cert = certHeader(certFor(human, alice.publicKey));
        const ok = await strict.post('/v1/compute', body, { ...headers, 'x-svc-delegation-cert': cert });
        assert.equal(ok.status, PASSED_ALL_GATES);
      } finally {
        await strict.close();
      }
    });
  });

  describe('gate 4: geometry pre-flight', () => {
    const post = async (job: Record<string, unknown>) => {
      const { body, headers } = signJob(alice, job);
      return gw.post('/v1/compute', body, headers);
    };
    const tile = (extra: Record<string, unknown>) => ({
      id: 't',
      type: 'tile_render',
      center_cell: '861e8050fffffff',
      ...extra,
    });

    it('rejects zoom outside 0..20 and unknown styles', async () => {
      for (const step of [tile({ zoom: 21 }), tile({ zoom: -1 }), tile({ zoom: 3.5 }), tile({ style: 'neon' })]) {
        const res = await post({ steps: [step] });
        assert.equal(res.status, 400, JSON.stringify(step));
        assert.equal((res.body as { error: string }).error, 'invalid_request');
        assert.match((res.body as { detail: string }).detail, /^steps\[0\]\.(zoom|style)/);
      }
      assert.equal((await post({ steps: [tile({ zoom: 20, style: 'dark' })] })).status, UPSTREAM_JOB_RAN);
    });

    it('rejects duplicate step ids and dangling depends_on', async () => {
      const dup = await post({ steps: [tile({}), tile({})] });
      assert.equal(dup.status, 400);
      assert.match((dup.body as { detail: string }).detail, /duplicate step id "t"/);
      const dangling = await post({ steps: [tile({ depends_on: 'ghost' })] });
      assert.equal(dangling.status, 400);
      assert.match((dangling.body as { detail: string }).detail, /ghost/);
    });

    it('rejects a cycle with cyclic_dependency naming it', async () => {
      const res = await post({
        steps: [
          { id: 'a', type: 'inference', depends_on: 'c' },
          { id: 'b', type: 'inference', depends_on: 'a' },
          { id: 'c', type: 'inference', depends_on: 'b' },
        ],
      });
      assert.equal(res.status, 400);
      assert.deepEqual(res.body, { error: 'cyclic_dependency', detail: 'steps form a cycle: a -> b -> c -> a' });
    });

    it('rejects invalid GeoJSON anywhere in the payload with invalid_geometry', async () => {
      const openRing = {
        type: 'Polygon',
        coordinates: [
          [
            [12.4, 41.8],
            [12.6, 41.8],
            [12.6, 42.0],
            [12.4, 42.1],
          ],
        ],
      };
      const res = await post({
        steps: [{ id: 'i', type: 'image_process', operation: 'ndvi', context: { area: openRing } }],
      });
      assert.equal(res.status, 400);
      assert.equal((res.body as { error: string }).error, 'invalid_geometry');
      assert.match((res.body as { detail: string }).detail, /steps\[0\]\.context\.area/);
      const closed = { ...openRing, coordinates: [[...openRing.coordinates[0]!, [12.4, 41.8]]] };
      const ok = await post({
        steps: [{ id: 'i', type: 'image_process', operation: 'ndvi', context: { area: closed } }],
      });
      assert.equal(ok.status, UPSTREAM_JOB_RAN); // the STAC catalog is a closed port here
    });
  });
});
