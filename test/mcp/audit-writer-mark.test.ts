import assert from 'node:assert/strict';
import { rewriteAuditBlock } from '../helpers/audit-tamper.js';
import { allToolsCertificate } from '../helpers/perception-certificate.js';
import { z } from 'zod';
import { breadcrumbBlockHash, verifyChain, type ChainVerification } from '../../core/breadcrumb.js';
import type { StoredBreadcrumb } from '../../core/breadcrumb-types.js';
import { canonicalJson } from '../../core/canonical-json.js';
import type { DelegationCertificate } from '../../core/delegation-cert.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import { isOwnVerifiedMark } from '../../core/verified-mark.js';
import { defaultBlockVerifier, type BlockVerifier } from '../../mcp/perception/block-verifier.js';
import { createPerceptionServer, type PerceptionServer } from '../../mcp/perception/server.js';
import type { PerceptionTool } from '../../mcp/perception/tool-def.js';
import type { AuditStore } from '../../store/audit-store.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';

// Verify-then-mark seen from outside: blocks recorded by the service's audited calls, reports through
// GET /compliance/:agent_pk on fresh servers, the mark through the store port, verifications counted by the
// server's injected BlockVerifier.
const CELL = '851e8053fffffff';
const T0 = Date.parse('2026-01-01T00:00:00.000Z');

const weather: PerceptionTool<{ h3_cell: z.ZodString }> = {
  name: 'perception_weather',
  title: 'Weather (test)',
  description: 'A fixed observation.',
  inputSchema: { h3_cell: z.string() },
  facet: 'perception',
  cellOf: (args) => args.h3_cell,
  run: async (args) => ({ temperature_c: 18.4, status: 'ok', h3_cell: args.h3_cell }),
};

/** The default verifier, counting the signatures it is asked about. */
function countingVerifier(): BlockVerifier & { count: number } {
  const verifier = {
    count: 0,
    async verify(items: Parameters<BlockVerifier['verify']>[0]) {
      verifier.count += items.length;
      return defaultBlockVerifier.verify(items);
    },
  };
  return verifier;
}

describe('audit chain: the writer verifies each block once and moves the mark', () => {
  let db: SqliteDatabase;
  let store: AuditStore;
  let agent: KeyPair;
  let certificate: DelegationCertificate;
  let now: number;
  let writer: PerceptionServer;
  let writes: ReturnType<typeof countingVerifier>;

  const serve = (blockVerifier: BlockVerifier) =>
    createPerceptionServer({
      store,
      agent,
      chain: [certificate],
      principalLocal: false,
      tools: [weather],
      clock: () => now,
      blockVerifier,
    });

  beforeEach(() => {
    db = openSqlite(':memory:');
    store = createSqliteAuditStore(db);
    agent = generateKeyPair();
    certificate = allToolsCertificate(agent.publicKey, CELL);
    now = T0;
    writes = countingVerifier();
    writer = serve(writes);
  });
  afterEach(() => db.close());

  /** `n` audited calls, one after another, each a second later. */
  async function record(n: number, server = writer): Promise<void> {
    for (let i = 0; i < n; i++) {
      now += 1000;
      const call = await server.auditor.call(weather, { h3_cell: CELL });
      assert.equal(call.outcome, 'ok');
    }
  }

  /** A report from a freshly started server (nothing in memory) and how many signatures it verified. */
  async function freshReport(): Promise<{ verdict: ChainVerification; verified: number }> {
    const counter = countingVerifier();
    const server = serve(counter);
    const { url } = await server.listen(0, '127.0.0.1');
    try {
      const res = await fetch(`${url}/compliance/${agent.publicKey}`);
      assert.equal(res.status, 200);
      const body = (await res.json()) as { chain_verification: ChainVerification };
      return { verdict: body.chain_verification, verified: counter.count };
    } finally {
      await server.close();
    }
  }

  const tip = async () => (await store.tip(agent.publicKey))!;
  const markIndex = async () => (await store.verifiedThrough(agent.publicKey))?.index;
  const fullVerdict = async () => verifyChain(await store.blocks(agent.publicKey), { anchor: null });
  const rewrite = (index: number, fields: Partial<StoredBreadcrumb>) =>
    rewriteAuditBlock(db, agent.publicKey, index, fields);

  it('costs one verification per new block, and a report over the written chain verifies none', async () => {
    await record(5);
    assert.equal(writes.count, 5, 'one verification per appended block');
    const mark = await store.verifiedThrough(agent.publicKey);
    assert.equal(mark?.index, 4);
    assert.equal(mark?.block_hash, (await tip()).block_hash);
    assert.ok(mark !== null && isOwnVerifiedMark(mark, agent.publicKey, agent.publicKey));

    const first = await freshReport();
    assert.equal(first.verdict.is_valid, true, first.verdict.issues.join('; '));
    assert.equal(first.verdict.block_count, 5);
    assert.equal(first.verified, 0, 'the mark stands in for every signature');

    await record(1);
    assert.equal(writes.count, 6, 'the new block cost one verification');
    assert.equal(await markIndex(), 5);
    const second = await freshReport();
    assert.equal(second.verdict.block_count, 6);
    assert.equal(second.verified, 0);
  });

  it('keeps the mark on the tip under concurrent calls', async () => {
    now += 1000;
    const calls = await Promise.all(Array.from({ length: 20 }, () => writer.auditor.call(weather, { h3_cell: CELL })));
    assert.deepEqual(calls.map((c) => c.outcome).sort(), Array<string>(20).fill('ok'));
    assert.equal(writes.count, 20);
    assert.equal(await markIndex(), 19);
    assert.equal((await store.verifiedThrough(agent.publicKey))?.block_hash, (await tip()).block_hash);
    const { verdict, verified } = await freshReport();
    assert.equal(verdict.is_valid, true, verdict.issues.join('; '));
    assert.equal(verified, 0);
  });

  it('reports a block edited below the mark invalid, and the mark never moves down', async () => {
    await record(10);
    const block = (await store.blocks(agent.publicKey, { fromIndex: 3, toIndex: 3 }))[0]!;
    const text = canonicalJson({ ...(JSON.parse(block.data_to_sign) as Record<string, unknown>), loc_res: 7 });
    rewrite(3, { data_to_sign: text, block_hash: breadcrumbBlockHash(text, block.signature) });

    const { verdict } = await freshReport();
    assert.equal(verdict.is_valid, false);
    assert.deepEqual(verdict.invalid_blocks, [3, 4]);
    assert.match(verdict.issues.join('; '), /block 3: Ed25519 signature does not verify/);
    assert.match(verdict.issues.join('; '), /block 4: prev_hash does not match block 3's block_hash/);
    assert.deepEqual(verdict, await fullVerdict());
    assert.equal(await markIndex(), 9, 'the mark never moves down');

    // The writer goes on chaining its own blocks; the edit below stays visible in every report.
    await record(1);
    assert.equal(await markIndex(), 10);
    assert.deepEqual((await freshReport()).verdict.invalid_blocks, [3, 4]);
  });

  it('stops the mark at a block someone else forged into the store, and reports it', async () => {
    await record(5);
    const last = await tip();
    // Block 5 as the agent's, chained to block 4, carrying another block's signature.
    const content = { ...(JSON.parse(last.data_to_sign) as Record<string, unknown>) };
    const text = canonicalJson({ ...content, index: 5, prev_hash: last.block_hash, meta: { duration_ms: 99 } });
    const signature = (await store.blocks(agent.publicKey, { fromIndex: 0, toIndex: 0 }))[0]!.signature;
    await store.appendBlock({
      agent_pk: agent.publicKey,
      index: 5,
      timestamp: last.timestamp,
      data_to_sign: text,
      signature,
      block_hash: breadcrumbBlockHash(text, signature),
    });

    // The writer meets the forged block (its index is taken), chains after it, and does not mark over it.
    await record(1);
    assert.equal((await tip()).index, 6);
    assert.equal(await markIndex(), 4);

    const { verdict, verified } = await freshReport();
    assert.equal(verdict.is_valid, false);
    assert.deepEqual(verdict.invalid_blocks, [5]);
    assert.match(verdict.issues.join('; '), /block 5: Ed25519 signature does not verify/);
    assert.deepEqual(verdict, await fullVerdict());
    assert.equal(verified, 2, 'only the blocks above the mark are verified');
    assert.equal(await markIndex(), 4, 'the mark stays below the forged block');
  });
});
