/**
 * Shared set-up of the settlement and anchoring tests: a SQLite ledger in memory, a fake Horizon with the
 * payer's account, keys, finished jobs whose ledger entries come from core/ledger-entries.ts, and a logger
 * that keeps what it is told.
 */
import type { ComputeResponse, StepResult } from '../../core/job-record.js';
import { fromCreditUnits, toCreditUnits } from '../../core/credits.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import { jobLedgerEntries } from '../../core/ledger-entries.js';
import type { LedgerEntry } from '../../core/ledger-types.js';
import { relayFee } from '../../core/pricing.js';
import { sha256Hex } from '../../core/hash.js';
import { createHorizonClient, type HorizonClient } from '../../activities/settlement/horizon.js';
import { stellarAddress } from '../../activities/settlement/stellar-keys.js';
import type { RetryPolicy, SettlementLogger } from '../../activities/settlement/submission-driver.js';
import type { LedgerStore } from '../../store/ledger-store.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteLedgerStore } from '../../store/sqlite/ledger-store.js';
import { startFakeHorizon, type FakeHorizon, type FakeHorizonOptions } from './fake-horizon.js';

export const FAST_RETRY: RetryPolicy = { attempts: 4, baseDelayMs: 1, maxDelayMs: 4 };
export const PROOF_CREDITS = 0.0001;
export const T0 = Date.parse('2026-03-01T10:00:00Z');

export function createTestLedger(): LedgerStore {
  return createSqliteLedgerStore(openSqlite(':memory:'));
}

export interface LogLine {
  level: 'info' | 'warn' | 'error';
  obj: object;
  msg: string;
}

export function recordingLogger(): SettlementLogger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  return {
    lines,
    info: (obj, msg) => lines.push({ level: 'info', obj, msg }),
    warn: (obj, msg) => lines.push({ level: 'warn', obj, msg }),
    error: (obj, msg) => lines.push({ level: 'error', obj, msg }),
  };
}

export interface Stage {
  fake: FakeHorizon;
  horizon: HorizonClient;
  ledger: LedgerStore;
  platform: KeyPair;
  requester: KeyPair;
  workers: KeyPair[];
  relay: KeyPair;
  close(): Promise<void>;
}

/** A fake Horizon with the platform's account, a Horizon client on it, an empty ledger and fresh keys. */
export async function stage(options: FakeHorizonOptions = {}): Promise<Stage> {
  const fake = await startFakeHorizon(options);
  const platform = generateKeyPair();
  fake.addAccount(stellarAddress(platform.publicKey));
  const ledger = createTestLedger();
  return {
    fake,
    horizon: createHorizonClient({ url: fake.url, timeoutMs: 2000, submitTimeoutMs: 2000 }),
    ledger,
    platform,
    requester: generateKeyPair(),
    workers: [generateKeyPair(), generateKeyPair(), generateKeyPair()],
    relay: generateKeyPair(),
    async close() {
      await ledger.close();
      await fake.close();
    },
  };
}

export interface StepSpec {
  id: string;
  /** A worker key (hex), 'backbone', or null. */
  worker_pk: string | null;
  cost: number;
  relay_pk?: string;
}

/** A finished job's answer with a consistent settlement (breakdown, proof, relay fees). */
export function jobResponse(jobId: string, steps: StepSpec[]): ComputeResponse {
  const results: StepResult[] = steps.map((s) => ({
    id: s.id,
    type: 'inference',
    status: 'complete',
    output: { text: s.id },
    latency_ms: 5,
    worker_pk: s.worker_pk,
    cost: s.cost,
    record_id: `rec-${jobId}-${s.id}`,
    ...(s.relay_pk ? { relay_pk: s.relay_pk } : {}),
  }));
  const breakdown = Object.fromEntries(steps.map((s) => [s.id, s.cost]));
  const relayUnits = new Map<string, number>();
  for (const s of steps) {
    if (s.relay_pk) relayUnits.set(s.relay_pk, (relayUnits.get(s.relay_pk) ?? 0) + toCreditUnits(relayFee(s.cost)));
  }
  const totalUnits = steps.reduce((sum, s) => sum + toCreditUnits(s.cost), 0) + toCreditUnits(PROOF_CREDITS);
  return {
    job_id: jobId,
    status: 'complete',
    worker_pk: steps[0]?.worker_pk ?? null,
    h3_cell: '861e8050fffffff',
    epoch: 1400,
    steps: results,
    settlement: {
      stellar_tx: null,
      total_credits: fromCreditUnits(totalUnits),
      breakdown,
      proof_credits: PROOF_CREDITS,
      ...(relayUnits.size > 0
        ? { relay_fees: Object.fromEntries([...relayUnits].map(([pk, u]) => [pk, fromCreditUnits(u)])) }
        : {}),
    },
    proof: { job_hash: jobHashFor(jobId), verify_url: `http://x/store/proof/rec-${jobId}`, record_id: `rec-${jobId}` },
  };
}

/** A stand-in job hash for the tests (the real one hashes the request and outputs). */
export const jobHashFor = (jobId: string): string => sha256Hex(`job-hash:${jobId}`);

/** Posts a finished job's entries (core/ledger-entries.ts) and returns them with the answer. */
export async function postJob(
  s: Stage,
  jobId: string,
  steps: StepSpec[],
  nowMs = T0,
): Promise<{ response: ComputeResponse; entries: LedgerEntry[] }> {
  const response = jobResponse(jobId, steps);
  const entries = jobLedgerEntries({
    response,
    requesterPk: s.requester.publicKey,
    platformPk: s.platform.publicKey,
    recordId: `rec-${jobId}`,
    nowMs,
    hardwareTierOf: () => 2,
  });
  await s.ledger.post(entries);
  return { response, entries };
}

/** Credits → the Stellar amount string Horizon shows for them (1 credit = 1 asset unit, floored to stroops). */
export function amountOf(units: number): string {
  const stroops = Math.floor(units / 10);
  return (stroops / 1e7).toFixed(7);
}

/** Records the delays a service sleeps, without sleeping long. */
export function recordingSleep(): { sleep: (ms: number) => Promise<void>; delays: number[] } {
  const delays: number[] = [];
  return {
    delays,
    sleep: async (ms) => {
      delays.push(ms);
      await new Promise((resolve) => setTimeout(resolve, Math.min(ms, 2)));
    },
  };
}
