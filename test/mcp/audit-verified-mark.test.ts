import assert from 'node:assert/strict';
import { rewriteAuditBlock } from '../helpers/audit-tamper.js';
import { allToolsCertificate } from '../helpers/perception-certificate.js';
import {
  breadcrumbBlockHash,
  nextBreadcrumb,
  signBreadcrumb,
  verifyChain,
  type ChainVerification,
} from '../../core/breadcrumb.js';
import type { StoredBreadcrumb } from '../../core/breadcrumb-types.js';
import { canonicalJson } from '../../core/canonical-json.js';
import { certificateHash, type DelegationCertificate } from '../../core/delegation-cert.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import { isOwnVerifiedMark, signVerifiedMark } from '../../core/verified-mark.js';
import { createPerceptionServer } from '../../mcp/perception/server.js';
import type { AuditStore } from '../../store/audit-store.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';

// The verified-through mark seen from outside: GET /compliance/:agent_pk on fresh servers over one store.
const CELL = '851e8053fffffff';
const T0 = Date.parse('2026-01-01T00:00:00.000Z');

describe('audit chain: verified-through mark', () => {
  let db: SqliteDatabase;
  let store: AuditStore;
  let agent: KeyPair;
  let certificate: DelegationCertificate;
  let tip: StoredBreadcrumb | null;

  beforeEach(() => {
    db = openSqlite(':memory:');
    store = createSqliteAuditStore(db);
    agent = generateKeyPair();
    certificate = allToolsCertificate(agent.publicKey, CELL);
    tip = null;
  });
  afterEach(() => db.close());

  async function append(n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      const at = T0 + ((tip?.index ?? -1) + 1) * 1000;
      tip = signBreadcrumb(
        nextBreadcrumb(tip, {
          identity: agent.publicKey,
          timestamp: new Date(at).toISOString(),
          loc_cell: CELL,
          loc_res: 5,
          context: { args_hash: 'aa'.repeat(32), result_hash: 'bb'.repeat(32), outcome: 'ok' },
          delegation_cert_hash: certificateHash(certificate),
          facet: 'perception',
          meta: { duration_ms: i },
          tool_name: 'perception_weather',
        }),
        agent,
      ).stored;
      await store.appendBlock(tip);
    }
  }

  /** A report from a freshly started server: nothing verified in memory, only what the store holds. */
  async function freshReport(): Promise<ChainVerification> {
    const server = createPerceptionServer({
      store,
      agent,
      chain: [certificate],
      principalLocal: false,
      tools: [],
      clock: () => Date.parse('2026-06-01T00:00:00.000Z'),
    });
    const { url } = await server.listen(0, '127.0.0.1');
    try {
      const res = await fetch(`${url}/compliance/${agent.publicKey}`);
      assert.equal(res.status, 200);
      return ((await res.json()) as { chain_verification: ChainVerification }).chain_verification;
    } finally {
      await server.close();
    }
  }

  /** What a full verification of the stored chain says, no shortcut taken. */
  const fullVerdict = async () => verifyChain(await store.blocks(agent.publicKey), { anchor: null });

  const rewrite = (index: number, fields: Partial<StoredBreadcrumb>) =>
    rewriteAuditBlock(db, agent.publicKey, index, fields);

  it('marks the chain verified through its tip, and a new block moves the mark up', async () => {
    await append(150);
    assert.equal(await store.verifiedThrough(agent.publicKey), null);
    const first = await freshReport();
    assert.equal(first.is_valid, true, first.issues.join('; '));
    const mark = await store.verifiedThrough(agent.publicKey);
    assert.equal(mark?.index, 149);
    assert.equal(mark?.block_hash, tip?.block_hash);
    assert.ok(mark !== null && isOwnVerifiedMark(mark, agent.publicKey, agent.publicKey));

    await append(1);
    const second = await freshReport();
    assert.equal(second.is_valid, true);
    assert.equal(second.block_count, 151);
    assert.equal((await store.verifiedThrough(agent.publicKey))?.index, 150);
  });

  it('catches a block edited after verification, with the verdict of a full verification', async () => {
    await append(120);
    assert.equal((await freshReport()).is_valid, true);
    const block = (await store.blocks(agent.publicKey, { fromIndex: 40, toIndex: 40 }))[0]!;
    const edited = { ...(JSON.parse(block.data_to_sign) as Record<string, unknown>), loc_res: 7 };
    rewrite(40, { data_to_sign: canonicalJson(edited) });
    const verdict = await freshReport();
    assert.equal(verdict.is_valid, false);
    assert.deepEqual(verdict.invalid_blocks, [40]);
    assert.match(verdict.issues.join('; '), /block 40: Ed25519 signature does not verify/);
    assert.deepEqual(verdict, await fullVerdict());
    assert.equal((await store.verifiedThrough(agent.publicKey))?.index, 119, 'the mark never moves down');
  });

  it('catches a block rewritten with its hash recomputed below the mark', async () => {
    await append(120);
    assert.equal((await freshReport()).is_valid, true);
    const block = (await store.blocks(agent.publicKey, { fromIndex: 40, toIndex: 40 }))[0]!;
    const text = canonicalJson({ ...(JSON.parse(block.data_to_sign) as Record<string, unknown>), loc_res: 7 });
    rewrite(40, { data_to_sign: text, block_hash: breadcrumbBlockHash(text, block.signature) });
    const verdict = await freshReport();
    assert.equal(verdict.is_valid, false);
    assert.deepEqual(verdict.invalid_blocks, [40, 41]);
    assert.match(verdict.issues.join('; '), /block 40: Ed25519 signature does not verify/);
    assert.deepEqual(verdict, await fullVerdict());
  });

  it('ignores a mark it did not sign: a store writer cannot vouch for a chain of their own', async () => {
    await append(100);
    // Block 10 carries a signature of other text; the mark claims the tip, signed by someone else's key.
    const other = (await store.blocks(agent.publicKey, { fromIndex: 11, toIndex: 11 }))[0]!;
    rewrite(10, { signature: other.signature });
    const forger = generateKeyPair();
    await store.markVerified(agent.publicKey, signVerifiedMark(forger, agent.publicKey, 99, tip!.block_hash));
    const verdict = await freshReport();
    assert.equal(verdict.is_valid, false);
    assert.ok(verdict.invalid_blocks.includes(10));
    assert.deepEqual(verdict, await fullVerdict());
  });
});
