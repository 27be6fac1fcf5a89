// Perception audit figures: building and verifying a long breadcrumb chain and the per-call audit overhead
// (pure core work, no store), and the compliance report over a SQLite store. Prints nothing itself.
import { allToolsCertificate } from '../test/helpers/perception-certificate.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { breadcrumbContext, nextBreadcrumb, signBreadcrumb, verifyChain } from '../core/breadcrumb.js';
import type { BreadcrumbContent, StoredBreadcrumb } from '../core/breadcrumb-types.js';
import { certificateHash } from '../core/delegation-cert.js';
import { generateKeyPair, type KeyPair } from '../core/identity.js';
import { preflightTool } from '../core/tool-preflight.js';
import { createPerceptionServer } from '../mcp/perception/server.js';
import type { PerceptionTool } from '../mcp/perception/tool-def.js';
import { createSqliteAuditStore } from '../store/sqlite/audit-store.js';
import { openSqlite } from '../store/sqlite/open-database.js';

const CELL = '851e8053fffffff';
const T0 = Date.parse('2026-01-01T00:00:00.000Z');

function fields(
  agent: KeyPair,
  certHash: string,
  i: number,
  nowMs: number,
): Omit<BreadcrumbContent, 'index' | 'prev_hash'> {
  const args = { h3_cell: CELL, timestamp: new Date(nowMs).toISOString(), write_to_spatial_memory: false };
  const result = {
    temperature_c: 18.4,
    wind_speed_ms: 3.1,
    precipitation_mm: 0,
    weather_code: 1,
    status: 'ok',
    h3_cell: CELL,
  };
  return {
    identity: agent.publicKey,
    timestamp: new Date(nowMs).toISOString(),
    loc_cell: CELL,
    loc_res: 5,
    context: breadcrumbContext(args, result, 'ok'),
    delegation_cert_hash: certHash,
    facet: 'perception',
    meta: { duration_ms: i % 97 },
    tool_name: 'perception_weather',
  };
}

/**
 * Signs a `blocks`-long chain, then verifies it from genesis; times both (ms), and a second verification
 * with the signature cache filled by the first (what a repeated report costs).
 */
export function benchVerifyChain(blocks = 100_000): {
  blocks: number;
  buildMs: number;
  verifyMs: number;
  cachedVerifyMs: number;
  valid: boolean;
} {
  const agent = generateKeyPair();
  const certHash = 'ab'.repeat(32);
  const chain: StoredBreadcrumb[] = new Array<StoredBreadcrumb>(blocks);
  let tip: StoredBreadcrumb | null = null;
  const start = performance.now();
  for (let i = 0; i < blocks; i++) {
    tip = signBreadcrumb(nextBreadcrumb(tip, fields(agent, certHash, i, T0 + i * 100)), agent).stored;
    chain[i] = tip;
  }
  const built = performance.now();
  const cache = new Set<string>();
  const result = verifyChain(chain, { anchor: null, signatureCache: cache });
  const verified = performance.now();
  // A later report over the same blocks: every check again except the Ed25519 verifications already made.
  const again = verifyChain(chain, { anchor: null, signatureCache: cache });
  const reverified = performance.now();
  return {
    blocks,
    buildMs: built - start,
    verifyMs: verified - built,
    cachedVerifyMs: reverified - verified,
    valid: result.is_valid && again.is_valid,
  };
}

const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

/**
 * Audit overhead of one tool call without the tool's work or the store: pre-flight against a certificate,
 * the call digest (JCS + SHA-256 of arguments and result), the next block, Ed25519 signing and block_hash.
 */
export function benchAuditOverhead(calls = 20_000): {
  calls: number;
  p50Micros: number;
  p99Micros: number;
  preflightP50Micros: number;
} {
  const agent = generateKeyPair();
  const certificate = allToolsCertificate(agent.publicKey, CELL);
  const certHash = certificateHash(certificate);
  const warmup = Math.min(1000, calls);
  const total: number[] = [];
  const preflight: number[] = [];
  let tip: StoredBreadcrumb | null = null;
  for (let i = 0; i < warmup + calls; i++) {
    const nowMs = T0 + 86_400_000 + i;
    const t0 = performance.now();
    const check = preflightTool({
      certificate,
      toolName: 'perception_weather',
      facet: 'perception',
      cell: CELL,
      nowMs,
      opsInLastHour: i % 1000,
    });
    const t1 = performance.now();
    if (!check.ok) throw new Error(`pre-flight refused the bench call: ${check.detail}`);
    tip = signBreadcrumb(nextBreadcrumb(tip, fields(agent, certHash, i, nowMs)), agent).stored;
    const t2 = performance.now();
    if (i >= warmup) {
      total.push((t2 - t0) * 1000);
      preflight.push((t1 - t0) * 1000);
    }
  }
  total.sort((a, b) => a - b);
  preflight.sort((a, b) => a - b);
  return {
    calls,
    p50Micros: percentile(total, 50),
    p99Micros: percentile(total, 99),
    preflightP50Micros: percentile(preflight, 50),
  };
}

/** A perception tool with no work of its own: the bench measures the audit path around it. */
const benchWeatherTool: PerceptionTool<{ h3_cell: z.ZodString }> = {
  name: 'perception_weather',
  title: 'Weather (bench)',
  description: 'A fixed observation, for benchmarks.',
  inputSchema: { h3_cell: z.string() },
  facet: 'perception',
  cellOf: (args) => args.h3_cell,
  run: async (args) => ({
    temperature_c: 18.4,
    wind_speed_ms: 3.1,
    precipitation_mm: 0,
    weather_code: 1,
    status: 'ok',
    h3_cell: args.h3_cell,
  }),
};

/**
 * The compliance report of a `blocks`-long chain through the service: GET /compliance/:agent_pk on a
 * perception server over a SQLite store file (read the period's blocks, the five checks on each, the report).
 * The chain is written through the service's own write path (the audited tool call: pre-flight, the tool,
 * sign, append, one verification and the verified-through mark), `writeMs` in all.
 * `coldMs` is the first report of a freshly started server over that chain (nothing in memory, the mark
 * stands in for every signature); `warmMs` the same server again; `newBlockMs` that server after one more
 * audited call (one signature verified, by the writer). `unverifiedMs` is the first report of another fresh
 * server once the mark is deleted: a chain nobody has verified, every signature checked on the Ed25519 pool.
 */
export async function benchReport(blocks = 100_000): Promise<{
  blocks: number;
  writeMs: number;
  coldMs: number;
  warmMs: number;
  newBlockMs: number;
  unverifiedMs: number;
  valid: boolean;
  operations: number;
}> {
  const dir = mkdtempSync(join(tmpdir(), 'geofabric-bench-audit-'));
  const db = openSqlite(join(dir, 'geofabric.db'));
  try {
    const store = createSqliteAuditStore(db);
    const agent = generateKeyPair();
    const certificate = allToolsCertificate(agent.publicKey, CELL);
    let nowMs = T0;
    const serve = () =>
      createPerceptionServer({
        store,
        agent,
        chain: [certificate],
        principalLocal: false,
        tools: [benchWeatherTool],
        clock: () => nowMs,
      });
    const record = async (server: ReturnType<typeof serve>) => {
      const call = await server.auditor.call(benchWeatherTool, { h3_cell: CELL });
      if (call.outcome !== 'ok') throw new Error(`the bench call was ${call.outcome}`);
    };
    const writer = serve();
    const writeStart = performance.now();
    for (let i = 0; i < blocks; i++) {
      nowMs = T0 + i * 100;
      await record(writer);
    }
    const writeMs = performance.now() - writeStart;
    nowMs = Date.parse('2026-06-01T00:00:00.000Z');
    const report = async (url: string) => {
      const start = performance.now();
      const res = await fetch(`${url}/compliance/${agent.publicKey}`);
      const body = (await res.json()) as {
        chain_verification: { is_valid: boolean };
        total_operations: number;
      };
      if (res.status !== 200) throw new Error(`report answered ${res.status}`);
      return { ms: performance.now() - start, body };
    };
    const measure = async <T>(fn: (server: ReturnType<typeof serve>, url: string) => Promise<T>): Promise<T> => {
      const server = serve();
      const { url } = await server.listen(0, '127.0.0.1');
      try {
        return await fn(server, url);
      } finally {
        await server.close();
      }
    };
    const [cold, warm, grown] = await measure(async (server, url) => {
      const first = await report(url);
      const again = await report(url);
      await record(server);
      return [first, again, await report(url)];
    });
    // A chain nobody has verified: the same blocks without their mark (the port never removes one).
    db.prepare('DELETE FROM audit_verified WHERE agent_pk = ?').run(agent.publicKey);
    const unverified = await measure((_, url) => report(url));
    return {
      blocks,
      writeMs,
      coldMs: cold.ms,
      warmMs: warm.ms,
      newBlockMs: grown.ms,
      unverifiedMs: unverified.ms,
      valid: [cold, warm, grown, unverified].every((r) => r.body.chain_verification.is_valid),
      operations: warm.body.total_operations,
    };
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
