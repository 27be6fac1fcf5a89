import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { canonicalJson } from '../../core/canonical-json.js';
import { jobHash, jobIdFromSignature, outputHash, requestHash } from '../../core/job-hash.js';
import type { StepResult } from '../../core/job-record.js';

const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/** RFC 9562: version nibble 8, variant bits 10 (so the 17th hex digit is 8, 9, a or b). */
const UUID_V8 = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const SIGNATURE = 'b'.repeat(86) + '==';
const REQUEST_HASH = sha256('the signed request');

type HashedStep = Pick<StepResult, 'id' | 'status' | 'output'>;

describe('job hash (docs/protocol.md §2.3)', () => {
  describe('job id', () => {
    it('is an RFC 9562 version-8 UUID', () => {
      const id = jobIdFromSignature(SIGNATURE);
      assert.match(id, UUID_V8);
      const hex = id.replaceAll('-', '');
      assert.equal(parseInt(hex[12]!, 16), 8, 'version');
      assert.equal(parseInt(hex[16]!, 16) >> 2, 0b10, 'variant');
    });

    it('keeps the hash of the signature in every bit but the version and variant', () => {
      for (let i = 0; i < 64; i++) {
        const signature = `sig-${i}`;
        const id = jobIdFromSignature(signature);
        assert.match(id, UUID_V8, signature);
        const hex = id.replaceAll('-', '');
        const h = sha256(`geofabric/job\n${signature}`);
        assert.equal(hex.slice(0, 12), h.slice(0, 12), signature);
        assert.equal(hex.slice(13, 16), h.slice(13, 16), signature);
        assert.equal(parseInt(hex[16]!, 16) & 0x3, parseInt(h[16]!, 16) & 0x3, signature);
        assert.equal(hex.slice(17, 32), h.slice(17, 32), signature);
      }
    });

    it('names the same job for the same signature', () => {
      assert.equal(jobIdFromSignature(SIGNATURE), jobIdFromSignature(SIGNATURE));
    });

    it('names different jobs for different signatures', () => {
      const ids = new Set(Array.from({ length: 100 }, (_, i) => jobIdFromSignature(`${SIGNATURE}${i}`)));
      assert.equal(ids.size, 100);
      assert.notEqual(jobIdFromSignature('a'), jobIdFromSignature('b'));
    });
  });

  describe('request and output hashes', () => {
    it('hashes the canonical JSON of the signed request body', () => {
      const body = { steps: [{ id: 'ask', type: 'inference' }], h3_cell: '861e8050fffffff', signature: 'sig' };
      assert.equal(requestHash(body), sha256(canonicalJson(body)));
      assert.equal(
        requestHash(body),
        sha256('{"h3_cell":"861e8050fffffff","signature":"sig","steps":[{"id":"ask","type":"inference"}]}'),
      );
    });

    it('does not depend on key order', () => {
      assert.equal(requestHash({ a: 1, b: [2, { d: 4, c: 3 }] }), requestHash({ b: [2, { c: 3, d: 4 }], a: 1 }));
      assert.equal(outputHash({ x: 'é', y: 0.5 }), outputHash({ y: 0.5, x: 'é' }));
    });

    it("hashes a step output's canonical JSON", () => {
      const output = { text: 'green', locations: [{ name: 'Colosseum', lat: 41.89 }] };
      assert.equal(outputHash(output), sha256(canonicalJson(output)));
      assert.equal(outputHash({}), sha256('{}'));
    });
  });

  describe('job hash', () => {
    const steps: HashedStep[] = [
      { id: 'ndvi', status: 'complete', output: { mean_ndvi: 0.42 } },
      { id: 'ask', status: 'failed', output: {} },
      { id: 'map', status: 'skipped', output: {} },
    ];

    it('is SHA-256 of JCS of the request hash and each step id, status and output hash', () => {
      const ndviHash = sha256('{"mean_ndvi":0.42}');
      const jcs =
        '{"outputs":[' +
        `{"id":"ndvi","output_hash":"${ndviHash}","status":"complete"},` +
        '{"id":"ask","output_hash":null,"status":"failed"},' +
        '{"id":"map","output_hash":null,"status":"skipped"}' +
        `],"request_hash":"${REQUEST_HASH}"}`;
      assert.equal(jobHash(REQUEST_HASH, steps), sha256(jcs));
    });

    it('agrees with the canonical JSON built from the documented fields', () => {
      const outputs = steps.map((s) => ({
        id: s.id,
        status: s.status,
        output_hash: s.status === 'complete' ? sha256(canonicalJson(s.output)) : null,
      }));
      assert.equal(jobHash(REQUEST_HASH, steps), sha256(canonicalJson({ request_hash: REQUEST_HASH, outputs })));
    });

    it('gives a step that did not complete a null output hash, whatever its output', () => {
      const withOutput: HashedStep[] = [{ id: 'ask', status: 'failed', output: { partial: 'text' } }];
      const withoutOutput: HashedStep[] = [{ id: 'ask', status: 'failed', output: {} }];
      assert.equal(jobHash(REQUEST_HASH, withOutput), jobHash(REQUEST_HASH, withoutOutput));
      assert.equal(
        jobHash(REQUEST_HASH, withOutput),
        sha256(`{"outputs":[{"id":"ask","output_hash":null,"status":"failed"}],"request_hash":"${REQUEST_HASH}"}`),
      );
    });

    it('changes when an output changes', () => {
      const changed = steps.map((s) => (s.id === 'ndvi' ? { ...s, output: { mean_ndvi: 0.43 } } : s));
      assert.notEqual(jobHash(REQUEST_HASH, changed), jobHash(REQUEST_HASH, steps));
    });

    it('changes when a status changes', () => {
      const changed = steps.map((s) => (s.id === 'ask' ? { ...s, status: 'skipped' as const } : s));
      assert.notEqual(jobHash(REQUEST_HASH, changed), jobHash(REQUEST_HASH, steps));
    });

    it('changes when the request changes', () => {
      assert.notEqual(jobHash(sha256('another request'), steps), jobHash(REQUEST_HASH, steps));
    });

    it('keeps request order: the same steps in another order hash differently', () => {
      assert.notEqual(jobHash(REQUEST_HASH, [...steps].reverse()), jobHash(REQUEST_HASH, steps));
    });
  });
});
