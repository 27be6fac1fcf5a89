// Perception audit figures: building and verifying a long breadcrumb chain and the per-call audit overhead
// (pure core work, no store), and the compliance report over a SQLite store. Prints nothing itself.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { breadcrumbContext, nextBreadcrumb, signBreadcrumb, verifyChain } from '../core/breadcrumb.js';
import type { BreadcrumbContent, StoredBreadcrumb } from '../core/breadcrumb-types.js';
import { certificateHash, issueCertificate, type DelegationCertificate } from '../core/delegation-cert.js';
import { generateKeyPair, type KeyPair } from '../core/identity.js';
import { DEFAULT_ALLOWED_TOOLS, preflightTool } from '../core/tool-preflight.js';
import { createPerceptionServer } from '../mcp/perception/server.js';
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

/** A certificate from a fresh principal for the bench cell: every tool of docs/protocol.md §4.3, no effective rate limit. */
const benchCertificate = (agent: KeyPair): DelegationCertificate =>
  issueCertificate(generateKeyPair().secretKey, {
    agent_pk: agent.publicKey,
    h3_cells: [CELL],
    facets: ['perception'],
    not_before: '2025-01-01T00:00:00.000Z',
    not_after: '2026-12-31T00:00:00.000Z',
    max_depth: 0,
    constraints: { allowed_tools: [...DEFAULT_ALLOWED_TOOLS], max_ops_per_hour: 1_000_000 },
  });

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
  const certificate = benchCertificate(agent);
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

/**
 * The compliance report of a `blocks`-long chain through the service: GET /compliance/:agent_pk on a
 * perception server over a SQLite store file (read the period's blocks, the five checks on each, the report).
 * `coldMs` is the first report ever over the chain (every signature verified, on the Ed25519 pool's workers);
 * `warmMs` the same server again; `restartMs` the first report of a second, freshly started server over the
 * same store (the verified-through mark stands in for the signatures); `newBlockMs` that server after one
 * more block (one signature verified).
 */
export async function benchReport(blocks = 100_000): Promise<{
  blocks: number;
  coldMs: number;
  warmMs: number;
  restartMs: number;
  newBlockMs: number;
  valid: boolean;
  operations: number;
}> {
  const dir = mkdtempSync(join(tmpdir(), 'geofabric-bench-audit-'));
  const db = openSqlite(join(dir, 'geofabric.db'));
  try {
    const store = createSqliteAuditStore(db);
    const agent = generateKeyPair();
    const certificate = benchCertificate(agent);
    const certHash = certificateHash(certificate);
    let tip: StoredBreadcrumb | null = null;
    const append = async (i: number) => {
      tip = signBreadcrumb(nextBreadcrumb(tip, fields(agent, certHash, i, T0 + i * 100)), agent).stored;
      await store.appendBlock(tip);
    };
    for (let i = 0; i < blocks; i++) await append(i);
    const serve = () =>
      createPerceptionServer({
        store,
        agent,
        chain: [certificate],
        principalLocal: false,
        tools: [],
        clock: () => Date.parse('2026-06-01T00:00:00.000Z'),
      });
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
    const first = serve();
    const { url } = await first.listen(0, '127.0.0.1');
    let cold;
    let warm;
    try {
      cold = await report(url);
      warm = await report(url);
    } finally {
      await first.close();
    }
    const second = serve();
    const again = await second.listen(0, '127.0.0.1');
    try {
      const restart = await report(again.url);
      await append(blocks);
      const grown = await report(again.url);
      return {
        blocks,
        coldMs: cold.ms,
        warmMs: warm.ms,
        restartMs: restart.ms,
        newBlockMs: grown.ms,
        valid: [cold, warm, restart, grown].every((r) => r.body.chain_verification.is_valid),
        operations: warm.body.total_operations,
      };
    } finally {
      await second.close();
    }
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
