import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ServiceError } from '../../core/errors.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';
import { describeAuditStoreContract, iso, makeBlock, makeChain, newAgent, T0 } from './audit-store.contract.js';

describeAuditStoreContract('SQLite (in memory)', async () => {
  const db = openSqlite(':memory:');
  return { store: createSqliteAuditStore(db), cleanup: async () => void db.close() };
});

describe('SQLite audit store on a shared file', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'geofabric-audit-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('lets one of two connections (as two processes) append an index, and each sees the other', async () => {
    const path = join(dir, 'geofabric.db');
    const [a, b] = [openSqlite(path), openSqlite(path)];
    try {
      const [storeA, storeB] = [createSqliteAuditStore(a), createSqliteAuditStore(b)];
      const pk = newAgent();
      const chain = makeChain(pk, 2);
      await storeA.appendBlock(chain[0]!);
      await storeB.appendBlock(chain[1]!);
      const rival = makeBlock(pk, 1, iso(T0 + 1500), { meta: { writer: 'A' } });
      await assert.rejects(
        storeA.appendBlock(rival),
        (error: unknown) => error instanceof ServiceError && error.code === 'record_conflict',
      );
      assert.deepEqual(await storeA.blocks(pk), chain);
      assert.deepEqual(await storeB.tip(pk), chain[1]);
    } finally {
      a.close();
      b.close();
    }
  });
});

describe('SQLite audit store with a long chain', function () {
  this.timeout(120_000);
  const N = 100_000;
  let db: SqliteDatabase;
  const pk = newAgent();
  const other = newAgent();
  const chain = makeChain(pk, N, T0, 100); // 100 ms apart: 10,000 s in all

  before(async () => {
    db = openSqlite(':memory:');
    const store = createSqliteAuditStore(db);
    await store.appendBlock(makeBlock(other, 0, iso(T0)));
    for (const block of chain) await store.appendBlock(block);
    await store.appendBlock(makeBlock(other, 1, iso(T0 + 50)));
  });
  after(() => db.close());

  it(`reads ${N.toLocaleString('en')} blocks back in order, whole and in ranges`, async () => {
    const store = createSqliteAuditStore(db);
    const all = await store.blocks(pk);
    assert.equal(all.length, N);
    assert.ok(all.every((block, i) => block.index === i));
    assert.deepEqual(all[N - 1], chain[N - 1]);
    assert.deepEqual((await store.tip(pk))?.index, N - 1);
    const page = await store.blocks(pk, { fromIndex: 90_000 }, 500);
    assert.deepEqual(page, chain.slice(90_000, 90_500));
    const timed = await store.blocks(pk, { from: iso(T0 + 9_000_000), to: iso(T0 + 9_000_900) });
    assert.deepEqual(timed, chain.slice(90_000, 90_010));
    assert.deepEqual(await store.blockBefore(pk, iso(T0 + 5_000_000)), chain[49_999]);
    assert.deepEqual(await store.agents(), [pk, other].sort());
  });

  it('answers every query from an index, without sorting', () => {
    const plan = (sql: string, ...params: unknown[]): string =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>)
        .map((r) => r.detail)
        .join('; ');
    const cases: Array<[string, RegExp]> = [
      [
        'SELECT * FROM audit_blocks WHERE agent_pk = ? AND idx BETWEEN ? AND ? ORDER BY idx LIMIT ?',
        /sqlite_autoindex_audit_blocks_1/,
      ],
      [
        'SELECT * FROM audit_blocks WHERE agent_pk = ? AND ts_ms BETWEEN ? AND ? AND idx BETWEEN ? AND ? ORDER BY ts_ms, idx LIMIT ?',
        /audit_blocks_time/,
      ],
      [
        'SELECT * FROM audit_blocks WHERE agent_pk = ? AND ts_ms < ? ORDER BY ts_ms DESC, idx DESC LIMIT 1',
        /audit_blocks_time/,
      ],
      ['SELECT * FROM audit_blocks WHERE agent_pk = ? ORDER BY idx DESC LIMIT 1', /sqlite_autoindex_audit_blocks_1/],
    ];
    for (const [sql, index] of cases) {
      const params = Array.from(sql.matchAll(/\?/g), () => 1);
      const detail = plan(sql, ...params);
      assert.match(detail, index, sql);
      assert.doesNotMatch(detail, /TEMP B-TREE/, sql);
    }
  });
});
