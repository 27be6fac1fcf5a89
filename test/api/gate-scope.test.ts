/**
 * The security review's gate findings, end to end over HTTP (docs/security.md §3): step cells must lie inside
 * the certificate, TRUSTED_PRINCIPALS anchors gate 3, max_ops_per_hour counts a request once however its
 * signature header is spelled, and bodies are strict JSON.
 */
import assert from 'node:assert/strict';
import { latLngToCell } from 'h3-js';
import { generateKeyPair } from '../../core/identity.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { certFor, certHeader, inferenceJob, signJob } from '../helpers/jobs.js';

const alice = generateKeyPair();
const human = generateKeyPair();
const ROME = '851e8053fffffff';
const ROME_6 = '861e8050fffffff';
const NEW_YORK = latLngToCell(40.71, -74.0, 6);
/** A job that passed every gate fails later without upstreams: 502 (tiles, imagery) or 503 (inference). */
const passed = (status: number) => status === 502 || status === 503;

type ErrorBody = { error: string; detail: string };

describe('gate findings of the security review, over HTTP', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.close());

  const post = (job: Record<string, unknown>, cert: string, key = alice) => {
    const { body, headers } = signJob(key, job);
    return gw.post('/v1/compute', body, { ...headers, 'x-svc-delegation-cert': cert });
  };
  const romeOnly = certHeader(certFor(human, alice.publicKey, { h3_cells: [ROME], facets: ['*'] }));

  describe('every cell the request names lies inside the certificate', () => {
    const tileJob = (cell: string) => ({
      h3_cell: ROME_6,
      steps: [{ id: 't', type: 'tile_render', center_cell: cell, zoom: 10 }],
      budget_credits: 0.1,
    });
    const imageryJob = (cell: string) => ({
      h3_cell: ROME_6,
      steps: [{ id: 'i', type: 'image_process', operation: 'stac_search', context: { h3_cell: cell } }],
      budget_credits: 0.1,
    });

    it('refuses a Rome-only certificate for a New York step center_cell', async () => {
      const res = await post(tileJob(NEW_YORK), romeOnly);
      assert.equal(res.status, 403, res.text);
      assert.equal((res.body as ErrorBody).error, 'delegation_invalid');
      assert.match((res.body as ErrorBody).detail, new RegExp(`cell ${NEW_YORK} is outside the delegated cells`));
    });

    it('refuses a Rome-only certificate for a New York step context.h3_cell', async () => {
      const res = await post(imageryJob(NEW_YORK), romeOnly);
      assert.equal(res.status, 403, res.text);
      assert.equal((res.body as ErrorBody).error, 'delegation_invalid');
    });

    it('control: the same steps over Rome pass gate 3', async () => {
      assert.ok(passed((await post(tileJob(ROME_6), romeOnly)).status));
      const imagery = await post(imageryJob(ROME_6), romeOnly);
      assert.notEqual(imagery.status, 403, imagery.text);
    });
  });

  it('refuses a request naming more cells than any valid job before resolving them (gate 2)', async () => {
    const steps = Array.from({ length: 40 }, (_, i) => ({
      id: `s${i}`,
      type: 'tile_render',
      center_cell: ROME_6,
      context: { h3_cell: ROME_6 },
    }));
    const res = await post({ h3_cell: ROME_6, steps, budget_credits: 0.1 }, romeOnly);
    assert.equal(res.status, 400);
    assert.equal((res.body as ErrorBody).error, 'invalid_request');
    assert.match((res.body as ErrorBody).detail, /names 81 cells; at most 72/);
  });

  describe('TRUSTED_PRINCIPALS', () => {
    let strict: TestGateway;
    const trusted = generateKeyPair();
    before(async () => {
      strict = await startGateway({
        config: { requireDelegation: true, trustedPrincipals: new Set([trusted.publicKey]) },
      });
    });
    after(() => strict.close());
    const send = (cert: string) => {
      const { body, headers } = signJob(alice, inferenceJob('hi'));
      return strict.post('/v1/compute', body, { ...headers, 'x-svc-delegation-cert': cert });
    };

    it('refuses a chain made seconds ago by a fresh key (facets *, ten years) with "untrusted principal"', async () => {
      const now = Date.now();
      const forged = certFor(generateKeyPair(), alice.publicKey, {
        facets: ['*'],
        not_before: new Date(now - 1000).toISOString(),
        not_after: new Date(now + 10 * 365 * 86_400_000).toISOString(),
      });
      const res = await send(certHeader(forged));
      assert.equal(res.status, 403);
      assert.equal((res.body as ErrorBody).error, 'delegation_invalid');
      assert.match((res.body as ErrorBody).detail, /untrusted principal/);
    });

    it('accepts a chain rooted at a trusted principal, through an intermediate agent', async () => {
      const agent = generateKeyPair();
      const now = Date.now();
      const root = certFor(trusted, agent.publicKey, { max_depth: 1 }, now);
      const leaf = certFor(agent, alice.publicKey, { h3_cells: [ROME_6], facets: ['inference'] }, now);
      assert.equal((await send(certHeader(root))).status, 403, 'the root alone ends at another agent');
      const res = await send(certHeader([root, leaf]));
      assert.ok(passed(res.status), res.text);
    });
  });

  it('counts a replay with a re-cased X-Idn-Signature as the same operation (max_ops_per_hour)', async () => {
    const dave = generateKeyPair();
    const cert = certHeader(certFor(human, dave.publicKey, { constraints: { max_ops_per_hour: 3 } }));
    const captured = signJob(dave, inferenceJob('captured'));
    const send = (job: ReturnType<typeof signJob>, signature = job.headers['x-idn-signature']) =>
      gw.post('/v1/compute', job.body, { 'x-idn-signature': signature, 'x-svc-delegation-cert': cert });
    assert.ok(passed((await send(captured)).status));
    // The replayer upper-cases different letters each time: gate 1 accepts each (it normalises the header).
    const sig = captured.headers['x-idn-signature'];
    for (const variant of [
      sig.toUpperCase(),
      ` ${sig.slice(0, 10).toUpperCase()}${sig.slice(10)}`,
      sig.replace(/a/g, 'A'),
    ]) {
      assert.ok(passed((await send(captured, variant)).status));
    }
    // Dave's budget of 3 has one op spent: his next two genuine requests run.
    assert.ok(passed((await send(signJob(dave, inferenceJob('two')))).status));
    assert.ok(passed((await send(signJob(dave, inferenceJob('three')))).status));
    assert.equal((await send(signJob(dave, inferenceJob('four')))).status, 429);
  });

  describe('strict JSON bodies', () => {
    it('refuses a repeated key with 400 invalid_json, even where the request would verify', async () => {
      const { body, headers } = signJob(alice, inferenceJob('hi', { budget_credits: 0.1 }));
      const json = JSON.stringify(body);
      // A proxy keeping the first budget_credits sees 999; JSON.parse (the last) sees the signed 0.1.
      const raw = `{"budget_credits":999,${json.slice(1)}`;
      const res = await gw.request('POST', '/v1/compute', {
        raw,
        headers: { ...headers, 'content-type': 'application/json' },
      });
      assert.equal(res.status, 400, res.text);
      assert.equal((res.body as ErrorBody).error, 'invalid_json');
      assert.match((res.body as ErrorBody).detail, /duplicate key "budget_credits"/);
    });

    it('refuses a 500,000-deep array with 400 invalid_json', async () => {
      const res = await gw.request('POST', '/v1/compute', {
        raw: '['.repeat(500_000) + ']'.repeat(500_000),
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(res.status, 400);
      assert.equal((res.body as ErrorBody).error, 'invalid_json');
      assert.match((res.body as ErrorBody).detail, /nests deeper than 64/);
    });
  });
});
