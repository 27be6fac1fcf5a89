import assert from 'node:assert/strict';
import { importJWK, SignJWT } from 'jose';
import { issueCertificate, type DelegationCertificate } from '../../core/delegation-cert.js';
import { ERROR_STATUS } from '../../core/errors.js';
import { signRequestBody } from '../../core/gates/signature.js';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { generateKeyPair, signMessage, type KeyPair } from '../../core/identity.js';
import { canonicalJson } from '../../core/canonical-json.js';
import { buildIdnTokenClaims, type IdnTokenClaims } from '../../core/idn-token-claims.js';
import {
  checkTokenRequest,
  DEFAULT_TOKEN_TTL_SECONDS,
  issueIdnToken,
  MAX_TOKEN_TTL_SECONDS,
  verifyIdnToken,
} from '../../mcp/governance/token.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const DAY = 86_400_000;
const ISSUER = 'https://governance.test';
const AUDIENCE = 'geofabric-perception';

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const partsOf = (token: string) => {
  const [header, payload, signature] = token.split('.') as [string, string, string];
  return {
    header,
    payload,
    signature,
    claims: JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>,
  };
};

function chainFor(agent: KeyPair, human = generateKeyPair()): DelegationCertificate[] {
  return [
    issueCertificate(human.secretKey, {
      agent_pk: agent.publicKey,
      h3_cells: [DEFAULT_PERCEPTION_CELL],
      facets: ['perception'],
      not_before: new Date(NOW - DAY).toISOString(),
      not_after: new Date(NOW + DAY).toISOString(),
      max_depth: 0,
    }),
  ];
}

describe('agent tokens (mcp/governance/token.ts)', () => {
  const governance = generateKeyPair();
  const agent = generateKeyPair();
  const claims: IdnTokenClaims = buildIdnTokenClaims({
    chain: chainFor(agent),
    trustTier: 'observed',
    epochIndex: 2,
    chainTipHash: 'ab'.repeat(32),
  });
  const verifier = { issuerPk: governance.publicKey, issuer: ISSUER, audience: AUDIENCE };
  const issue = (overrides: Partial<Parameters<typeof issueIdnToken>[0]> = {}) =>
    issueIdnToken({
      key: governance,
      claims,
      nowMs: NOW,
      ttlSeconds: 600,
      issuer: ISSUER,
      audience: AUDIENCE,
      ...overrides,
    });

  describe('issueIdnToken and verifyIdnToken', () => {
    it('issues an EdDSA JWT with the docs/protocol.md §2.9 claims that verifies', async () => {
      const issued = await issue({ jti: 'call-1' });
      assert.equal(issued.jti, 'call-1');
      assert.equal(issued.expires_at, '2026-03-01T12:10:00.000Z');
      const { header, claims: payload } = partsOf(issued.token);
      assert.deepEqual(JSON.parse(Buffer.from(header, 'base64url').toString()), { alg: 'EdDSA', typ: 'JWT' });
      assert.equal(payload.sub, agent.publicKey);
      assert.equal(payload.iat, NOW / 1000);
      assert.equal(payload.exp, NOW / 1000 + 600);

      const verified = await verifyIdnToken(issued.token, { ...verifier, nowMs: NOW + 599_000 });
      assert.ok(verified.ok, verified.ok ? '' : verified.detail);
      assert.deepEqual(verified.value, {
        ...claims,
        sub: agent.publicKey,
        iss: ISSUER,
        aud: AUDIENCE,
        iat: NOW / 1000,
        exp: NOW / 1000 + 600,
        jti: 'call-1',
      });
      assert.notEqual((await issue()).jti, (await issue()).jti);
    });

    it('refuses an expired token', async () => {
      const { token } = await issue();
      const verified = await verifyIdnToken(token, { ...verifier, nowMs: NOW + 600_000 });
      assert.equal(verified.ok, false);
      assert.equal(verified.ok ? '' : verified.error, 'token_invalid');
      assert.equal(ERROR_STATUS.token_invalid, 401);
      assert.match(verified.ok ? '' : verified.detail, /expired at 2026-03-01T12:10:00.000Z/);
    });

    it('refuses a token signed by another key', async () => {
      const { token } = await issue({ key: generateKeyPair() });
      const verified = await verifyIdnToken(token, { ...verifier, nowMs: NOW });
      assert.match(verified.ok ? '' : verified.detail, /signature does not verify/);
    });

    it('refuses a token whose claim was changed after signing', async () => {
      const { token } = await issue();
      const { header, signature, claims: payload } = partsOf(token);
      const tampered = `${header}.${b64url({ ...payload, idn_trust_tier: 'certified' })}.${signature}`;
      const verified = await verifyIdnToken(tampered, { ...verifier, nowMs: NOW });
      assert.match(verified.ok ? '' : verified.detail, /signature does not verify/);
    });

    it('refuses alg none and HS256, whatever the signature', async () => {
      const { token } = await issue();
      const { payload, signature } = partsOf(token);
      const none = await verifyIdnToken(`${b64url({ alg: 'none', typ: 'JWT' })}.${payload}.`, {
        ...verifier,
        nowMs: NOW,
      });
      assert.match(none.ok ? '' : none.detail, /alg "none" is not accepted; only EdDSA/);
      const hs = await verifyIdnToken(`${b64url({ alg: 'HS256' })}.${payload}.${signature}`, {
        ...verifier,
        nowMs: NOW,
      });
      assert.match(hs.ok ? '' : hs.detail, /alg "HS256" is not accepted/);
    });

    it('refuses another issuer or audience, malformed tokens, and a bad issuer key', async () => {
      const { token } = await issue();
      const iss = await verifyIdnToken(token, { ...verifier, issuer: 'https://other', nowMs: NOW });
      assert.match(iss.ok ? '' : iss.detail, /issuer is not "https:\/\/other"/);
      const aud = await verifyIdnToken(token, { ...verifier, audience: 'other', nowMs: NOW });
      assert.match(aud.ok ? '' : aud.detail, /audience is not "other"/);
      for (const bad of ['', 'abc', 'a.b', `${token}.x`, 'x'.repeat(20_000)]) {
        const verified = await verifyIdnToken(bad, { ...verifier, nowMs: NOW });
        assert.equal(verified.ok ? '' : verified.error, 'token_invalid', bad.slice(0, 20));
      }
      const weakKey = await verifyIdnToken(token, { ...verifier, issuerPk: '0'.repeat(64), nowMs: NOW });
      assert.match(weakKey.ok ? '' : weakKey.detail, /issuer key is invalid/);
    });

    it('refuses a signed token whose claims fail the schema, whose sub is not the agent, or that lives too long', async () => {
      const b64 = (hex: string) => Buffer.from(hex, 'hex').toString('base64url');
      const key = await importJWK(
        { kty: 'OKP', crv: 'Ed25519', x: b64(governance.publicKey), d: b64(governance.secretKey) },
        'EdDSA',
      );
      const sign = (payload: Record<string, unknown>, iat: number, exp: number) =>
        new SignJWT(payload)
          .setProtectedHeader({ alg: 'EdDSA' })
          .setIssuer(ISSUER)
          .setAudience(AUDIENCE)
          .setIssuedAt(iat)
          .setExpirationTime(exp)
          .setJti('j')
          .sign(key);
      const t = NOW / 1000;
      const schema = await verifyIdnToken(await sign({ ...claims, sub: agent.publicKey, idn_epoch: -1 }, t, t + 60), {
        ...verifier,
        nowMs: NOW,
      });
      assert.match(schema.ok ? '' : schema.detail, /token claims: idn_epoch/);
      const sub = await verifyIdnToken(await sign({ ...claims, sub: governance.publicKey }, t, t + 60), {
        ...verifier,
        nowMs: NOW,
      });
      assert.match(sub.ok ? '' : sub.detail, /sub is not idn_agent_pk/);
      const long = await verifyIdnToken(
        await sign({ ...claims, sub: agent.publicKey }, t, t + MAX_TOKEN_TTL_SECONDS + 1),
        {
          ...verifier,
          nowMs: NOW,
        },
      );
      assert.match(long.ok ? '' : long.detail, /lifetime exceeds 3600 seconds/);
      const missingJti = await verifyIdnToken(
        await new SignJWT({ ...claims, sub: agent.publicKey })
          .setProtectedHeader({ alg: 'EdDSA' })
          .setIssuer(ISSUER)
          .setAudience(AUDIENCE)
          .setIssuedAt(t)
          .setExpirationTime(t + 60)
          .sign(key),
        { ...verifier, nowMs: NOW },
      );
      assert.match(missingJti.ok ? '' : missingJti.detail, /jti/);
    });

    it('refuses to issue from bad inputs', async () => {
      await assert.rejects(issue({ ttlSeconds: 0 }), TypeError);
      await assert.rejects(issue({ ttlSeconds: MAX_TOKEN_TTL_SECONDS + 1 }), TypeError);
      await assert.rejects(issue({ claims: { ...claims, idn_epoch: -1 } }), /idn_epoch/);
      await assert.rejects(issue({ key: { ...governance, publicKey: agent.publicKey } }), /does not belong/);
    });
  });

  describe('checkTokenRequest (POST /token)', () => {
    const request = (overrides: Record<string, unknown> = {}, signer: KeyPair = agent) => {
      const body: Record<string, unknown> = {
        agent_pk: agent.publicKey,
        delegation_chain: chainFor(agent),
        created_at: new Date(NOW - 60_000).toISOString(),
        ...overrides,
      };
      const signature = signMessage(signer.secretKey, canonicalJson(body));
      return { body, signature };
    };

    it('accepts a request signed by the agent with its chain, defaulting the lifetime', () => {
      const { body, signature } = request();
      const checked = checkTokenRequest({ body, signatureHeader: signature, nowMs: NOW });
      assert.ok(checked.ok, checked.ok ? '' : checked.detail);
      assert.equal(checked.value.agentPk, agent.publicKey);
      assert.equal(checked.value.ttlSeconds, DEFAULT_TOKEN_TTL_SECONDS);
      assert.equal(checked.value.chain.length, 1);
      assert.equal(checked.value.grant.agent_pk, agent.publicKey);

      // A single certificate (not an array), a ttl, and the signature in the body too, as gate 1 sends it.
      const single = request({ delegation_chain: chainFor(agent)[0], ttl_seconds: 120 });
      const withField = { ...single.body, signature: single.signature };
      const again = checkTokenRequest({ body: withField, signatureHeader: single.signature.toUpperCase(), nowMs: NOW });
      assert.ok(again.ok, again.ok ? '' : again.detail);
      assert.equal(again.value.ttlSeconds, 120);
    });

    it('answers signature_required (401) without the header', () => {
      const { body } = request();
      const checked = checkTokenRequest({ body, signatureHeader: undefined, nowMs: NOW });
      assert.equal(checked.ok ? '' : checked.error, 'signature_required');
      assert.equal(ERROR_STATUS.signature_required, 401);
    });

    it('answers invalid_signature for another signer, a changed body, or a body signature that differs', () => {
      const other = request({}, generateKeyPair());
      assert.equal(
        (() => {
          const c = checkTokenRequest({ body: other.body, signatureHeader: other.signature, nowMs: NOW });
          return c.ok ? '' : c.error;
        })(),
        'invalid_signature',
      );
      const { body, signature } = request();
      const changed = checkTokenRequest({
        body: { ...body, ttl_seconds: 3600 },
        signatureHeader: signature,
        nowMs: NOW,
      });
      assert.equal(changed.ok ? '' : changed.error, 'invalid_signature');
      const differs = checkTokenRequest({
        body: { ...body, signature: 'ab'.repeat(64) },
        signatureHeader: signature,
        nowMs: NOW,
      });
      assert.match(differs.ok ? '' : differs.detail, /differ/);
      const short = checkTokenRequest({ body, signatureHeader: 'abc', nowMs: NOW });
      assert.equal(short.ok ? '' : short.error, 'invalid_signature');
    });

    it('answers stale_request for a created_at more than 5 minutes away (a replayed request)', () => {
      const { body, signature } = request();
      const later = checkTokenRequest({ body, signatureHeader: signature, nowMs: NOW + 5 * 60_000 });
      assert.equal(later.ok ? '' : later.error, 'stale_request');
      const ahead = request({ created_at: new Date(NOW + 6 * 60_000).toISOString() });
      const future = checkTokenRequest({ body: ahead.body, signatureHeader: ahead.signature, nowMs: NOW });
      assert.equal(future.ok ? '' : future.error, 'stale_request');
    });

    it('answers delegation_invalid when the chain does not end at agent_pk or does not verify now', () => {
      const stranger = generateKeyPair();
      const { body, signature } = request({ delegation_chain: chainFor(stranger) });
      const checked = checkTokenRequest({ body, signatureHeader: signature, nowMs: NOW });
      assert.equal(checked.ok ? '' : checked.error, 'delegation_invalid');
      assert.match(checked.ok ? '' : checked.detail, /chain ends at .*, not the requester/);

      const late = request({ created_at: new Date(NOW + 2 * DAY).toISOString() });
      const expired = checkTokenRequest({ body: late.body, signatureHeader: late.signature, nowMs: NOW + 2 * DAY });
      assert.match(expired.ok ? '' : expired.detail, /expired/);

      const garbage = request({ delegation_chain: { version: 1 } });
      const parsed = checkTokenRequest({ body: garbage.body, signatureHeader: garbage.signature, nowMs: NOW });
      assert.equal(parsed.ok ? '' : parsed.error, 'delegation_invalid');
    });

    it('answers invalid_request for a body that is not a token request', () => {
      for (const overrides of [
        { ttl_seconds: 0 },
        { ttl_seconds: MAX_TOKEN_TTL_SECONDS + 1 },
        { created_at: 'yesterday' },
        { extra: 1 },
      ]) {
        const { body, signature } = request(overrides);
        const checked = checkTokenRequest({ body, signatureHeader: signature, nowMs: NOW });
        assert.equal(checked.ok ? '' : checked.error, 'invalid_request', JSON.stringify(overrides));
      }
      const missing = checkTokenRequest({ body: [], signatureHeader: 'ab'.repeat(64), nowMs: NOW });
      assert.equal(missing.ok ? '' : missing.error, 'invalid_request');
      // A gate-1 style body (requester_pk, no agent_pk) is not a token request.
      const gate1 = signRequestBody(agent.secretKey, { created_at: new Date(NOW).toISOString() });
      const wrongShape = checkTokenRequest({ body: gate1.body, signatureHeader: gate1.signature, nowMs: NOW });
      assert.equal(wrongShape.ok ? '' : wrongShape.error, 'invalid_request');
    });
  });
});
