import assert from 'node:assert/strict';
import { cellToChildren } from 'h3-js';
import { certificateBlake3, issueCertificate, type DelegationCertificate } from '../../core/delegation-cert.js';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import {
  buildIdnTokenClaims,
  chainTipHash,
  currentEpochIndex,
  GENESIS_CHAIN_TIP,
  idnTokenClaimsSchema,
  tokenTrustTier,
} from '../../core/idn-token-claims.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const DAY = 86_400_000;
const INNER = cellToChildren(DEFAULT_PERCEPTION_CELL, 6)[2] as string;
const TIP = 'ab'.repeat(32);

function twoLinkChain(): { human: KeyPair; middle: KeyPair; agent: KeyPair; chain: DelegationCertificate[] } {
  const [human, middle, agent] = [generateKeyPair(), generateKeyPair(), generateKeyPair()];
  const window = { not_before: new Date(NOW - DAY).toISOString(), not_after: new Date(NOW + DAY).toISOString() };
  const root = issueCertificate(human.secretKey, {
    agent_pk: middle.publicKey,
    h3_cells: [DEFAULT_PERCEPTION_CELL],
    facets: ['perception'],
    max_depth: 1,
    ...window,
  });
  const leaf = issueCertificate(middle.secretKey, {
    agent_pk: agent.publicKey,
    h3_cells: [INNER],
    facets: ['perception'],
    max_depth: 0,
    ...window,
  });
  return { human, middle, agent, chain: [root, leaf] };
}

describe('agent token claims (docs/protocol.md §2.9)', () => {
  it('takes the agent, cells and Blake3 hash of the last link and the principal of the root', () => {
    const { human, agent, chain } = twoLinkChain();
    const claims = buildIdnTokenClaims({ chain, trustTier: 'trusted', epochIndex: 4, chainTipHash: TIP });
    assert.deepEqual(claims, {
      idn_agent_pk: agent.publicKey,
      idn_principal_pk: human.publicKey,
      idn_delegation_cert: certificateBlake3(chain[1]!),
      idn_trust_tier: 'trusted',
      idn_epoch: 4,
      idn_chain_tip: TIP,
      idn_h3_cells: [INNER],
    });
    assert.notEqual(claims.idn_delegation_cert, certificateBlake3(chain[0]!));
    assert.ok(idnTokenClaimsSchema.safeParse(claims).success);
  });

  it('gives an agent without an epoch epoch 0 and without a block the 64-zero tip', () => {
    assert.equal(currentEpochIndex(null), 0);
    assert.equal(currentEpochIndex({ epoch_index: 0 }), 1);
    assert.equal(currentEpochIndex({ epoch_index: 6 }), 7);
    assert.equal(chainTipHash(null), GENESIS_CHAIN_TIP);
    assert.match(GENESIS_CHAIN_TIP, /^0{64}$/);
    assert.equal(chainTipHash({ block_hash: TIP }), TIP);
    const { chain } = twoLinkChain();
    const fresh = buildIdnTokenClaims({
      chain,
      trustTier: 'provisioned',
      epochIndex: currentEpochIndex(null),
      chainTipHash: chainTipHash(null),
    });
    assert.equal(fresh.idn_epoch, 0);
    assert.equal(fresh.idn_chain_tip, GENESIS_CHAIN_TIP);
  });

  it('claims the sovereign tier as certified, the four protocol tiers as they are', () => {
    assert.equal(tokenTrustTier('sovereign'), 'certified');
    for (const tier of ['provisioned', 'observed', 'trusted', 'certified'] as const)
      assert.equal(tokenTrustTier(tier), tier);
    const { chain } = twoLinkChain();
    const claims = buildIdnTokenClaims({ chain, trustTier: 'sovereign', epochIndex: 0, chainTipHash: TIP });
    assert.equal(claims.idn_trust_tier, 'certified');
    assert.equal(idnTokenClaimsSchema.safeParse({ ...claims, idn_trust_tier: 'sovereign' }).success, false);
  });

  it('refuses inputs that cannot make valid claims', () => {
    const { chain } = twoLinkChain();
    const base = { chain, trustTier: 'observed' as const, epochIndex: 0, chainTipHash: TIP };
    assert.throws(() => buildIdnTokenClaims({ ...base, chain: [] }), TypeError);
    assert.throws(() => buildIdnTokenClaims({ ...base, epochIndex: -1 }), /epochIndex/);
    assert.throws(() => buildIdnTokenClaims({ ...base, epochIndex: 1.5 }), /epochIndex/);
    assert.throws(() => buildIdnTokenClaims({ ...base, chainTipHash: 'genesis' }), /chainTipHash/);
    assert.throws(() => buildIdnTokenClaims({ ...base, chainTipHash: TIP.toUpperCase() }), /chainTipHash/);
  });

  it('the schema refuses bad keys, cells and epochs, and unknown claims', () => {
    const { chain } = twoLinkChain();
    const claims = buildIdnTokenClaims({ chain, trustTier: 'observed', epochIndex: 2, chainTipHash: TIP });
    for (const bad of [
      { idn_agent_pk: 'xyz' },
      { idn_h3_cells: ['rome'] },
      { idn_epoch: -1 },
      { idn_epoch: 2.5 },
      { idn_chain_tip: 'genesis' },
      { idn_extra: true },
    ]) {
      assert.equal(idnTokenClaimsSchema.safeParse({ ...claims, ...bad }).success, false, JSON.stringify(bad));
    }
  });
});
