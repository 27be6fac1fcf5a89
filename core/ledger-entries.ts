/**
 * The ledger entries a finished job or a bought Merkle proof posts (docs/protocol.md §1.4, §1.10, §8). Pure: the
 * caller passes the stored answer, the keys and the time, and posts what comes back (store/ledger-store.ts).
 *
 * A job's entries are balanced: they sum to exactly 0 in integer credit units.
 * - `job_charge`: the requester pays `settlement.total_credits` (its steps plus the job's proof).
 * - `step_earning`, one per account that ran steps: the cost of its completed steps less the relay fees of
 *   those steps (the fee is a share of the step, paid out of the worker's earning, never charged on top).
 *   The gateway's own steps (worker_pk = the platform key) earn the platform like any worker's.
 * - `relay_fee`, one per relay: the fee `settlement.relay_fees` recorded for it.
 * - `proof_fee`: the platform earns `settlement.proof_credits` (it seals the proof).
 * - What nobody else earns goes to the platform's `step_earning`: backbone steps (docs/protocol.md §8 prices them at 0;
 *   should one ever cost something, the platform serves it and pays the backbone) and steps without a worker.
 *   So the entries balance whatever the rounding; with today's arithmetic (finishJob) that remainder is 0.
 * Zero amounts post nothing: a job that ran no step (failed before dispatch) has no entries at all.
 *
 * Re-runs: a job that failed for a transient reason may run again (api/routes/compute.ts), and its latest
 * answer is its one settlement: it charges again the steps reused from the failed run. The failed run's entries
 * are posted already, so run n > 1 posts only the difference between its settlement and what the earlier runs
 * posted, per account and kind, under ids of its own (`job:<job_id>:run-<n>:…`). The job's entries then net to
 * its latest settlement; a correction may carry the sign opposite to its kind's (a relay fee the re-run lost).
 *
 * Entries are a function of the stored answer, the finish time and the earlier runs' entries only, so a retried
 * or duplicate finish builds the very same entries and the store's idempotency by id makes the post count once.
 */
import { BACKBONE_WORKER } from './backbone-worker.js';
import { toCreditUnits } from './credits.js';
import type { ComputeResponse, StepResult } from './job-record.js';
import type { LedgerEntry, LedgerEntryKind } from './ledger-types.js';
import { PRICES, RELAY_FEE_SHARE, relayFee } from './pricing.js';

export interface JobLedgerInput {
  /** The finished job's answer as stored (a duplicate finish passes the same one). */
  response: ComputeResponse;
  requesterPk: string;
  /** The gateway node key that sealed the job's proof: it earns the proof fee and its own steps. */
  platformPk: string;
  /** The job's `compute/job` proof record id. */
  recordId: string;
  /** When the job finished (the stored record's `updated_at`), so a re-post has the same `created_at`. */
  nowMs: number;
  /** The hardware tier (1–3) of a worker, null when unknown. */
  hardwareTierOf: (workerPk: string) => number | null;
  /** The relay share the job was settled with (finishJob's); RELAY_FEE_SHARE by default. */
  relayFeeShare?: number;
  /** Which run of the job answered (ComputeJobInput.run): 1 (the default) first. */
  run?: number;
  /** The entries earlier runs of the job posted: this run posts only the difference (module comment). */
  earlier?: readonly LedgerEntry[];
}

const jobPrefix = (jobId: string, run: number) => (run > 1 ? `job:${jobId}:run-${run}` : `job:${jobId}`);

/** Entry ids: deterministic from what they account for, so a retry never posts twice. */
export const ledgerEntryIds = {
  jobCharge: (jobId: string, run = 1) => `${jobPrefix(jobId, run)}:charge`,
  stepEarning: (jobId: string, pk: string, run = 1) => `${jobPrefix(jobId, run)}:earning:${pk}`,
  relayFee: (jobId: string, pk: string, run = 1) => `${jobPrefix(jobId, run)}:relay:${pk}`,
  proofFee: (jobId: string, run = 1) => `${jobPrefix(jobId, run)}:proof`,
  proofCharge: (requestId: string) => `proof:${requestId}:charge`,
  proofPurchaseFee: (requestId: string) => `proof:${requestId}:fee`,
} as const;

/** The balanced entries of a finished job (see the module comment). Throws RangeError on an inconsistent answer. */
export function jobLedgerEntries(input: JobLedgerInput): LedgerEntry[] {
  const { response, platformPk } = input;
  const jobId = response.job_id;
  const run = input.run ?? 1;
  if (!Number.isSafeInteger(run) || run < 1) throw new RangeError(`job ${jobId}: invalid run ${run}`);
  const settlement = response.settlement;
  const createdAt = isoAt(input.nowMs);
  const entry = (
    id: string,
    accountPk: string,
    kind: LedgerEntryKind,
    amountUnits: number,
    stepIds: string[],
    hardwareTier: number | null,
  ): LedgerEntry => ({
    version: 1,
    id,
    account_pk: accountPk,
    kind,
    amount_units: amountUnits,
    job_id: jobId,
    record_id: input.recordId,
    step_ids: stepIds,
    hardware_tier: hardwareTier,
    created_at: createdAt,
  });
  const tierOf = (pk: string): number | null => hardwareTier(input.hardwareTierOf(pk));

  const paid = response.steps.filter((s) => s.status === 'complete' && toCreditUnits(s.cost) > 0);
  const feeOf = relayFeesByStep(paid, settlement.relay_fees ?? {}, input.relayFeeShare ?? RELAY_FEE_SHARE, jobId);

  // Earnings, one per account in the order its first step ran; the platform's also collects what nobody earns.
  const earnings = new Map<string, { units: number; stepIds: string[] }>();
  const earn = (pk: string, units: number, stepId: string | null) => {
    const e = earnings.get(pk) ?? { units: 0, stepIds: [] };
    e.units += units;
    if (stepId !== null) e.stepIds.push(stepId);
    earnings.set(pk, e);
  };
  const unowned: string[] = [];
  for (const step of paid) {
    if (step.worker_pk === null || step.worker_pk === BACKBONE_WORKER) unowned.push(step.id);
    else earn(step.worker_pk, toCreditUnits(step.cost) - (feeOf.get(step) ?? 0), step.id);
  }

  const relays = new Map<string, { units: number; stepIds: string[] }>();
  for (const step of paid) {
    if (!step.relay_pk) continue;
    const r = relays.get(step.relay_pk) ?? { units: 0, stepIds: [] };
    r.units += feeOf.get(step) ?? 0;
    r.stepIds.push(step.id);
    relays.set(step.relay_pk, r);
  }

  const totalUnits = toCreditUnits(settlement.total_credits);
  const proofUnits = toCreditUnits(settlement.proof_credits);
  let paidOut = proofUnits;
  for (const e of earnings.values()) paidOut += e.units;
  for (const r of relays.values()) paidOut += r.units;
  const remainder = totalUnits - paidOut;
  if (remainder < 0) {
    throw new RangeError(
      `job ${jobId}: settlement charges ${totalUnits} credit units but pays out ${paidOut} (inconsistent answer)`,
    );
  }
  if (remainder > 0 || unowned.length > 0) {
    earn(platformPk, remainder, null);
    earnings.get(platformPk)!.stepIds.push(...unowned);
  }

  const ids = {
    job_charge: () => ledgerEntryIds.jobCharge(jobId, run),
    step_earning: (pk: string) => ledgerEntryIds.stepEarning(jobId, pk, run),
    relay_fee: (pk: string) => ledgerEntryIds.relayFee(jobId, pk, run),
    proof_fee: () => ledgerEntryIds.proofFee(jobId, run),
  };
  const entries: LedgerEntry[] = [entry(ids.job_charge(), input.requesterPk, 'job_charge', -totalUnits, [], null)];
  for (const [pk, e] of earnings) {
    entries.push(entry(ids.step_earning(pk), pk, 'step_earning', e.units, e.stepIds, tierOf(pk)));
  }
  for (const [pk, r] of relays) {
    entries.push(entry(ids.relay_fee(pk), pk, 'relay_fee', r.units, r.stepIds, tierOf(pk)));
  }
  entries.push(entry(ids.proof_fee(), platformPk, 'proof_fee', proofUnits, [], null));

  // A re-run posts the difference to what earlier runs posted, per account and kind; what they posted that this
  // settlement no longer has is reversed.
  const before = new Map<string, { entry: LedgerEntry; units: number }>();
  for (const e of input.earlier ?? []) {
    const key = `${e.kind} ${e.account_pk}`;
    before.set(key, { entry: e, units: (before.get(key)?.units ?? 0) + e.amount_units });
  }
  for (const e of entries) {
    const key = `${e.kind} ${e.account_pk}`;
    e.amount_units -= before.get(key)?.units ?? 0;
    before.delete(key);
  }
  for (const { entry: e, units } of before.values()) {
    const id =
      e.kind === 'step_earning' || e.kind === 'relay_fee'
        ? ids[e.kind](e.account_pk)
        : e.kind === 'job_charge' || e.kind === 'proof_fee'
          ? ids[e.kind]()
          : null;
    if (id === null) throw new RangeError(`job ${jobId}: an earlier run posted a ${e.kind} entry`);
    entries.push(entry(id, e.account_pk, e.kind, -units, [], e.hardware_tier));
  }
  const posted = entries.filter((e) => e.amount_units !== 0);
  if (new Set(posted.map((e) => e.id)).size !== posted.length) {
    throw new RangeError(`job ${jobId}: earlier runs' entries do not fit this run's (two accounts for one entry)`);
  }
  return posted;
}

export interface ProofPurchaseInput {
  requesterPk: string;
  platformPk: string;
  /** The record whose Merkle proof was bought. */
  recordId: string;
  /** Derived from the purchase request's signature by the caller, so a replayed request posts nothing new. */
  requestId: string;
  nowMs: number;
}

/** A Merkle proof bought outside a job (docs/protocol.md §8: 0.0001 credits): the requester pays the platform. */
export function proofPurchaseEntries(input: ProofPurchaseInput): LedgerEntry[] {
  const units = toCreditUnits(PRICES.merkleProof);
  const base = {
    version: 1 as const,
    job_id: null,
    record_id: input.recordId,
    step_ids: [],
    hardware_tier: null,
    created_at: isoAt(input.nowMs),
  };
  return [
    {
      ...base,
      id: ledgerEntryIds.proofCharge(input.requestId),
      account_pk: input.requesterPk,
      kind: 'proof_charge',
      amount_units: -units,
    },
    {
      ...base,
      id: ledgerEntryIds.proofPurchaseFee(input.requestId),
      account_pk: input.platformPk,
      kind: 'proof_fee',
      amount_units: units,
    },
  ];
}

/**
 * Each relayed step's fee in credit units. finishJob recorded each relay's fee as the sum of
 * relayFee(step cost, share) over the completed steps it routed; the same per-step rounding gives each worker
 * exactly what its steps paid. Should the recorded sum differ (the share was reconfigured, or the answer was
 * written by other code), the recorded fee wins, apportioned over the relay's steps by cost (largest
 * remainder), so the relay gets what the answer says and the entries still balance.
 */
function relayFeesByStep(
  paid: readonly StepResult[],
  recorded: Record<string, number>,
  share: number,
  jobId: string,
): Map<StepResult, number> {
  const byRelay = new Map<string, StepResult[]>();
  for (const step of paid) {
    if (step.relay_pk) byRelay.set(step.relay_pk, [...(byRelay.get(step.relay_pk) ?? []), step]);
  }
  for (const [pk, fee] of Object.entries(recorded)) {
    if (toCreditUnits(fee) !== 0 && !byRelay.has(pk)) {
      throw new RangeError(`job ${jobId}: relay ${pk} has a fee but routed no completed step (inconsistent answer)`);
    }
  }
  const fees = new Map<StepResult, number>();
  for (const [pk, steps] of byRelay) {
    const total = Object.hasOwn(recorded, pk) ? toCreditUnits(recorded[pk]!) : 0;
    const costs = steps.map((s) => toCreditUnits(s.cost));
    const costSum = costs.reduce((a, b) => a + b, 0);
    if (total < 0 || total > costSum) {
      throw new RangeError(
        `job ${jobId}: relay ${pk}'s fee is outside 0 … the cost of its steps (inconsistent answer)`,
      );
    }
    let perStep = steps.map((s) => toCreditUnits(relayFee(s.cost, share)));
    if (perStep.reduce((a, b) => a + b, 0) !== total) perStep = apportion(total, costs);
    steps.forEach((s, i) => fees.set(s, perStep[i]!));
  }
  return fees;
}

/** Splits `total` over `weights` (not all 0) by the largest-remainder method: integers that sum to `total`. */
function apportion(total: number, weights: readonly number[]): number[] {
  // BigInt: total × weight can exceed 2^53 for large jobs.
  const sum = BigInt(weights.reduce((a, b) => a + b, 0));
  const parts = weights.map((w) => (BigInt(total) * BigInt(w)) / sum);
  const rests = weights.map((w, i) => ({ i, rest: BigInt(total) * BigInt(w) - parts[i]! * sum }));
  let left = total - parts.reduce((a, b) => a + Number(b), 0);
  // Ties go to the earlier step, so the split is deterministic.
  rests.sort((a, b) => (a.rest === b.rest ? a.i - b.i : a.rest > b.rest ? -1 : 1));
  for (const { i } of rests) {
    if (left === 0) break;
    parts[i] = parts[i]! + 1n;
    left--;
  }
  return parts.map(Number);
}

function hardwareTier(tier: number | null): number | null {
  return tier === 1 || tier === 2 || tier === 3 ? tier : null;
}

function isoAt(ms: number): string {
  if (!Number.isSafeInteger(ms)) throw new RangeError(`not a time in ms: ${ms}`);
  return new Date(ms).toISOString();
}
