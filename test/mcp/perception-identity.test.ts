import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueCertificate, verifyDelegationChain } from '../../core/delegation-cert.js';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { generateKeyPair } from '../../core/identity.js';
import { DEFAULT_ALLOWED_TOOLS } from '../../core/tool-preflight.js';
import { loadPerceptionIdentity, PerceptionIdentityError, PERCEPTION_FACETS } from '../../mcp/perception/identity.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const DAY = 86_400_000;

function identityError(run: () => unknown): PerceptionIdentityError {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof PerceptionIdentityError, `expected a PerceptionIdentityError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected loading the identity to fail');
}

describe('perception identity', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'perception-identity-'));
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('provisions an agent key, a local principal and a 30-day certificate on a fresh data dir', () => {
    const identity = loadPerceptionIdentity({ dataDir, nowMs: NOW });
    const dir = join(dataDir, 'perception');
    for (const file of ['agent-key.json', 'principal-key.json', 'delegation-cert.json']) {
      assert.ok(existsSync(join(dir, file)), file);
      assert.equal(statSync(join(dir, file)).mode & 0o777, 0o600, `${file} is private to its owner`);
    }
    assert.equal(identity.principalLocal, true);
    assert.match(identity.agentSource, /agent-key\.json \(new\)$/);
    assert.match(identity.certificateSource, /delegation-cert\.json \(new\)$/);
    const cert = identity.certificate;
    assert.equal(cert.agent_pk, identity.agent.publicKey);
    assert.deepEqual(cert.h3_cells, [DEFAULT_PERCEPTION_CELL]);
    assert.deepEqual(cert.facets, [...PERCEPTION_FACETS]);
    assert.deepEqual(cert.constraints?.allowed_tools, [...DEFAULT_ALLOWED_TOOLS]);
    assert.equal(cert.max_depth, 0);
    assert.equal(Date.parse(cert.not_after) - Date.parse(cert.not_before), 30 * DAY);
    const principal = JSON.parse(readFileSync(join(dir, 'principal-key.json'), 'utf8')) as { public_key: string };
    assert.equal(cert.principal_pk, principal.public_key);
    assert.ok(verifyDelegationChain(identity.chain, { now: NOW, agentPk: identity.agent.publicKey }).ok);
  });

  it('reuses the key and the certificate on a later start, and re-issues an expiring certificate', () => {
    const first = loadPerceptionIdentity({ dataDir, nowMs: NOW });
    const again = loadPerceptionIdentity({ dataDir, nowMs: NOW + 3 * DAY });
    assert.equal(again.agent.publicKey, first.agent.publicKey);
    assert.deepEqual(again.certificate, first.certificate);
    assert.doesNotMatch(again.certificateSource, /new|re-issued/);

    const later = loadPerceptionIdentity({ dataDir, nowMs: NOW + 31 * DAY });
    assert.equal(later.agent.publicKey, first.agent.publicKey);
    assert.equal(later.certificate.principal_pk, first.certificate.principal_pk, 'same local principal');
    assert.notDeepEqual(later.certificate, first.certificate);
    assert.match(later.certificateSource, /re-issued/);
    assert.equal(later.certificate.not_before, new Date(NOW + 31 * DAY).toISOString());
  });

  it('takes the agent key from IDN_AGENT_SK and issues the local certificate to it', () => {
    const key = generateKeyPair();
    const identity = loadPerceptionIdentity({ dataDir, agentSecretKey: key.secretKey, nowMs: NOW });
    assert.equal(identity.agent.publicKey, key.publicKey);
    assert.equal(identity.agentSource, 'IDN_AGENT_SK');
    assert.equal(identity.certificate.agent_pk, key.publicKey);
    assert.ok(!existsSync(join(dataDir, 'perception', 'agent-key.json')));
    assert.match(
      identityError(() => loadPerceptionIdentity({ dataDir, agentSecretKey: 'xyz', nowMs: NOW })).message,
      /^IDN_AGENT_SK: /,
    );
  });

  describe('IDN_DELEGATION_CERT', () => {
    const agent = generateKeyPair();
    const human = generateKeyPair();
    const cert = (fields: { not_before?: string; not_after?: string; agent_pk?: string } = {}) =>
      issueCertificate(human.secretKey, {
        agent_pk: fields.agent_pk ?? agent.publicKey,
        h3_cells: [DEFAULT_PERCEPTION_CELL],
        facets: ['perception', 'compliance'],
        not_before: fields.not_before ?? new Date(NOW - DAY).toISOString(),
        not_after: fields.not_after ?? new Date(NOW + DAY).toISOString(),
        max_depth: 0,
      });
    const load = (text: string) =>
      loadPerceptionIdentity({ dataDir, agentSecretKey: agent.secretKey, delegationCert: text, nowMs: NOW });

    it('accepts a certificate issued to the agent, as JSON or base64, and marks its principal not local', () => {
      const json = JSON.stringify(cert());
      for (const text of [json, Buffer.from(json).toString('base64'), JSON.stringify([cert()])]) {
        const identity = load(text);
        assert.equal(identity.principalLocal, false);
        assert.equal(identity.certificate.principal_pk, human.publicKey);
        assert.equal(identity.certificateSource, 'IDN_DELEGATION_CERT');
      }
      assert.ok(!existsSync(join(dataDir, 'perception', 'principal-key.json')), 'no local principal');
    });

    it('refuses an expired, foreign, tampered or malformed certificate, naming the problem', () => {
      const expired = cert({
        not_before: new Date(NOW - 3 * DAY).toISOString(),
        not_after: new Date(NOW - DAY).toISOString(),
      });
      assert.match(
        identityError(() => load(JSON.stringify(expired))).message,
        /^IDN_DELEGATION_CERT: link 0: expired at /,
      );

      const foreign = cert({ agent_pk: generateKeyPair().publicKey });
      assert.match(identityError(() => load(JSON.stringify(foreign))).message, /not the requester/);

      const tampered = { ...cert(), h3_cells: ['801ffffffffffff'] };
      assert.match(identityError(() => load(JSON.stringify(tampered))).message, /principal_signature does not verify/);

      assert.match(identityError(() => load('{"version": 1')).message, /IDN_DELEGATION_CERT: not valid JSON/);
      assert.match(identityError(() => load('{"version": 2}')).message, /IDN_DELEGATION_CERT: link 0: version/);
    });

    it('with TRUSTED_PRINCIPALS, refuses a certificate from another root and accepts one from a listed root', () => {
      const withTrust = (trusted: string[]) =>
        loadPerceptionIdentity({
          dataDir,
          agentSecretKey: agent.secretKey,
          delegationCert: JSON.stringify(cert()),
          nowMs: NOW,
          trustedPrincipals: new Set(trusted),
        });
      assert.match(
        identityError(() => withTrust([generateKeyPair().publicKey])).message,
        /^IDN_DELEGATION_CERT: untrusted principal/,
      );
      assert.equal(withTrust([human.publicKey]).certificate.principal_pk, human.publicKey);
    });
  });

  it('with TRUSTED_PRINCIPALS, refuses to act under the self-made development principal unless it is listed', () => {
    const load = (trusted: string[]) =>
      loadPerceptionIdentity({ dataDir, nowMs: NOW, trustedPrincipals: new Set(trusted) });
    assert.match(identityError(() => load([generateKeyPair().publicKey])).message, /^untrusted principal/);
    const principal = (
      JSON.parse(readFileSync(join(dataDir, 'perception', 'principal-key.json'), 'utf8')) as { public_key?: string }
    ).public_key;
    assert.ok(principal !== undefined, 'the refused start still wrote the local principal key');
    assert.equal(load([principal]).principalLocal, true);
  });

  it('does not overwrite an unreadable key file', () => {
    const dir = join(dataDir, 'perception');
    loadPerceptionIdentity({ dataDir, nowMs: NOW });
    writeFileSync(join(dir, 'agent-key.json'), 'not json');
    assert.match(
      identityError(() => loadPerceptionIdentity({ dataDir, nowMs: NOW })).message,
      /agent-key\.json: not a usable key file/,
    );
    assert.equal(readFileSync(join(dir, 'agent-key.json'), 'utf8'), 'not json');
  });
});
