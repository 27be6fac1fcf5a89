/**
 * Settlement of the credit ledger on Stellar (docs/protocol.md §1.10, §2.3 `settlement.stellar_tx`).
 *
 * Port `none` (the default) records nothing: entries only, `stellar_tx` stays null. Port `stellar` pays
 * payees from the payer account (the gateway node's key, docs/protocol.md §5.1) in one of two modes:
 *   - `job`: once a job's payee entries (worker earnings and relay fees; never the platform's own proof
 *     fee, never the payer itself) total ≥ the threshold, ONE transaction with one payment per payee,
 *     memo = the job hash (Memo.hash, 32 bytes). Settlement id `job:<job_id>`.
 *   - `balance`: an account whose unsettled positive entries total ≥ the threshold gets one payment
 *     covering them. Settlement id `balance:<account_pk>:<n>`, memo = SHA-256 of that id.
 *
 * Amounts: 1 credit = 1 unit of the settlement asset. Credit units are 1e-8 credits and Stellar amounts
 * have 7 decimals (1 stroop = 1e-7 = 10 credit units), so each payee is paid floor(units / 10) stroops;
 * `payees` records the units actually paid (a multiple of 10) while `entry_ids` lists every entry settled,
 * so the forfeited rounding (< 10 units, < 1e-7 credits per payee and payment) is entries − payees.
 *
 * Never paying twice rests on submission-driver.ts (pending record with the signed envelope before
 * submitting, lookup by hash before any resubmission, tx_bad_seq → memo search) and on entries being
 * reserved by every open (pending or failed) settlement: a new settlement never includes them.
 */
import { startRepeatingTask, type RepeatingTask } from '../repeating-task.js';
import {
  Memo,
  Networks,
  Operation,
  TransactionBuilder,
  Account,
  BASE_FEE,
  TimeoutInfinite,
} from '@stellar/stellar-sdk';
import type { Asset } from '@stellar/stellar-sdk';
import type { KeyPair } from '../../core/identity.js';
import { isHex } from '../../core/hex.js';
import { sha256Hex } from '../../core/hash.js';
import type { LedgerEntry, LedgerSettlement } from '../../core/ledger-types.js';
import type { LedgerStore } from '../../store/ledger-store.js';
import type { HorizonClient } from './horizon.js';
import { parseAsset, stellarAddress, stellarKeypair } from './stellar-keys.js';
import {
  createKeyedLock,
  type KeyedLock,
  driveSubmission,
  newSubmission,
  sleepMs,
  type RetryPolicy,
  type SettlementLogger,
  type SignedEnvelope,
  type SubmissionState,
} from './submission-driver.js';

/** Credit units per stroop (1e-7 asset units) when 1 credit = 1 asset unit. */
export const CREDIT_UNITS_PER_STROOP = 10;
/** Default threshold: 0.01 credits (SETTLEMENT_THRESHOLD). */
export const DEFAULT_SETTLEMENT_THRESHOLD_UNITS = 1_000_000;
/** Default sweep interval of `start()`. */
export const DEFAULT_SETTLEMENT_SWEEP_MS = 60_000;

const PAYEE_KINDS: ReadonlySet<LedgerEntry['kind']> = new Set(['step_earning', 'relay_fee']);
/** Open settlements read per retry sweep (and to learn which entries are reserved). */
const OPEN_SCAN_LIMIT = 10_000;
/** Stellar allows at most 100 operations per transaction. */
const MAX_OPS = 100;

export type SettlementPort = 'none' | 'stellar';
export type SettlementMode = 'job' | 'balance';

export interface SettlementServiceDeps {
  ledger: LedgerStore;
  port: SettlementPort;
  /** Required when port is `stellar`. */
  horizon?: HorizonClient;
  /** The paying account's key (the gateway node's key). */
  payer: KeyPair;
  /** Default Networks.TESTNET. */
  networkPassphrase?: string;
  /** An SDK Asset or its configured form (`native`, `CODE:ISSUER`); default native. */
  asset?: Asset | string;
  /**
   * Integer credit units. Mode job: a job whose payees together reach it is paid at once, in one transaction;
   * smaller jobs' earnings wait for the balance sweep. Both modes: an account whose unsettled earnings reach it
   * is paid by the sweep, so nothing stays unpaid for being small.
   */
  thresholdUnits: number;
  mode: SettlementMode;
  /** ms since the Unix epoch. */
  clock: () => number;
  logger: SettlementLogger;
  retry: RetryPolicy;
  /** The job hash (64 hex) of a job, for the memo; when absent or null the memo is fallbackJobMemo(job id). */
  jobHashOf?: (jobId: string) => Promise<string | null>;
  /** Accounts the balance sweep considers (e.g. the registered workers); see `settleBalances`. */
  listAccounts?: () => Promise<string[]>;
  /** Fee per operation in stroops; default BASE_FEE (100). */
  baseFee?: string;
  memoSearchRecords?: number;
  /** Also re-driven by each sweep (e.g. the epoch anchorer's open anchors). */
  alsoRetry?: () => Promise<unknown>;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  /**
   * Serialises everything this service submits from the payer's account (key: the payer's pk): one sequence
   * number at a time, and entries chosen and reserved by one settlement before the next looks. Share it with
   * the epoch anchorer when both use one account. Default: a lock of this service's own.
   */
  payerLock?: KeyedLock;
  /** Told the state each drive of a settlement ended in (submitted, pending, failed): the gateway's metrics. */
  onSettlement?: (settlement: LedgerSettlement) => void;
}

export interface SettlementService {
  /**
   * Settles after a job's entries were posted. Mode job: pays the job if it reaches the threshold (or
   * re-drives its open settlement). Mode balance: pays each of the job's payees whose unsettled balance
   * reaches it. Returns the settlements touched, in their final state; Horizon failures leave them `failed`
   * (not thrown); store failures throw. Port none: [].
   */
  settleJob(jobId: string): Promise<LedgerSettlement[]>;
  /**
   * Re-drives open settlements, then pays every account (the given ones, else `listAccounts()` plus every
   * account seen by `settleJob` in this process) whose unsettled, unreserved positive entries reach the
   * threshold (in mode job: what jobs below the threshold left). Port none: [].
   */
  settleBalances(accounts?: string[]): Promise<LedgerSettlement[]>;
  /** Re-drives every pending or failed settlement (oldest first). */
  retryOpen(): Promise<LedgerSettlement[]>;
  /**
   * A sweep now and every `intervalMs` after the previous one ends (never overlapping): retryOpen, then
   * the balances (settleBalances), then `alsoRetry`. Errors are logged, never thrown. Port none: no sweep.
   */
  start(intervalMs?: number): void;
  /** Stops the sweep and waits for a run in flight. */
  stop(): Promise<void>;
}

export const jobSettlementId = (jobId: string): string => `job:${jobId}`;

/** Memo of a balance payout: SHA-256 of its settlement id (unique, and recomputable from the record). */
export const balanceMemo = (settlementId: string): string => sha256Hex(`geofabric/settlement\n${settlementId}`);

/** Memo of a job whose job hash is unknown: a stable stand-in, so a retry finds the same transaction. */
export const fallbackJobMemo = (jobId: string): string => sha256Hex(`geofabric/job-settlement\n${jobId}`);

/**
 * The Stellar transaction that settled a job, for `settlement.stellar_tx` (docs/protocol.md §2.3): the submitted
 * `job:<job_id>` settlement; null with port none, before it is paid, and in balance mode (a balance payout
 * settles many jobs and no job alone).
 */
export async function jobStellarTx(
  ledger: LedgerStore,
  jobId: string,
): Promise<{ tx_hash: string; ledger: number | null } | null> {
  const settlement = await ledger.settlement(jobSettlementId(jobId));
  if (settlement === null || settlement.status !== 'submitted' || settlement.tx_hash === null) return null;
  return { tx_hash: settlement.tx_hash, ledger: settlement.ledger };
}

/** Integer stroops → a Stellar amount string with 7 decimals. */
export function stroopsToAmount(stroops: number): string {
  if (!Number.isSafeInteger(stroops) || stroops <= 0) throw new RangeError(`not a payable amount: ${stroops}`);
  const s = String(stroops).padStart(8, '0');
  return `${s.slice(0, -7)}.${s.slice(-7)}`;
}

/** Credit units → the units a payment can carry (floored to whole stroops). */
export const payableUnits = (units: number): number =>
  Math.floor(units / CREDIT_UNITS_PER_STROOP) * CREDIT_UNITS_PER_STROOP;

export function createSettlementService(deps: SettlementServiceDeps): SettlementService {
  const { ledger, payer, logger } = deps;
  const enabled = deps.port === 'stellar';
  if (enabled && deps.horizon === undefined) throw new TypeError('settlement port stellar needs a Horizon client');
  if (!Number.isSafeInteger(deps.thresholdUnits) || deps.thresholdUnits < 0) {
    throw new RangeError('settlement threshold must be a non-negative integer of credit units');
  }
  const asset =
    typeof deps.asset === 'string' || deps.asset === undefined ? parseAsset(deps.asset ?? 'native') : deps.asset;
  const networkPassphrase = deps.networkPassphrase ?? Networks.TESTNET;
  const baseFee = deps.baseFee ?? BASE_FEE;
  const keypair = enabled ? stellarKeypair(payer) : null;
  const source = enabled ? stellarAddress(payer.publicKey) : '';
  const sleep = deps.sleep ?? sleepMs;
  const random = deps.random ?? Math.random;
  const payerLock = deps.payerLock ?? createKeyedLock();
  // One key for all: settlements of one payer share its sequence numbers and its unsettled entries.
  const withLock = <T>(work: () => Promise<T>): Promise<T> => payerLock(payer.publicKey, work);
  const seenAccounts = new Set<string>();
  const nextBalanceIndex = new Map<string, number>();
  const iso = () => new Date(deps.clock()).toISOString();

  function buildPayment(payees: Record<string, number>, memoHex: string, sequence: string): SignedEnvelope {
    const builder = new TransactionBuilder(new Account(source, sequence), { fee: baseFee, networkPassphrase })
      .addMemo(Memo.hash(memoHex))
      .setTimeout(TimeoutInfinite); // no expiry: the same envelope stays resubmittable until its sequence is spent
    for (const pk of Object.keys(payees).sort()) {
      builder.addOperation(
        Operation.payment({
          destination: stellarAddress(pk),
          asset,
          amount: stroopsToAmount(payees[pk]! / CREDIT_UNITS_PER_STROOP),
        }),
      );
    }
    const tx = builder.build();
    tx.sign(keypair!);
    return { tx_hash: tx.hash().toString('hex'), envelope_xdr: tx.toXDR() };
  }

  /** Drives a settlement from its latest record (or a new one, not yet recorded) to its final state. */
  async function drive(record: LedgerSettlement): Promise<LedgerSettlement> {
    // A record always carries its memo; should one lack it, the memo is derived from the id as when built.
    const memoHex =
      record.memo_hash ??
      (record.id.startsWith('balance:') ? balanceMemo(record.id) : fallbackJobMemo(record.id.slice('job:'.length)));
    let latest: LedgerSettlement = { ...record, memo_hash: memoHex };
    const final = await driveSubmission(latest, {
      horizon: deps.horizon!,
      source,
      memoHex,
      build: (sequence) => buildPayment(record.payees, memoHex, sequence),
      save: async (state: SubmissionState) => {
        latest = { ...latest, ...state, at: iso() };
        await ledger.recordSettlement(latest);
      },
      retry: deps.retry,
      sleep,
      random,
      logger,
      label: record.id,
      memoSearchRecords: deps.memoSearchRecords,
    });
    latest = { ...latest, ...final };
    try {
      deps.onSettlement?.(latest);
    } catch {
      // Metrics never fail a payment.
    }
    const log = { id: latest.id, status: latest.status, tx_hash: latest.tx_hash, ledger: latest.ledger };
    if (latest.status === 'submitted') logger.info(log, 'settlement paid');
    else logger.warn({ ...log, error: latest.error }, 'settlement not paid yet; retryOpen will re-drive it');
    return latest;
  }

  /** Entry ids reserved by open (pending or failed) settlements: no new settlement may include them. */
  async function reservedEntryIds(): Promise<Set<string>> {
    const open = await ledger.openSettlements(OPEN_SCAN_LIMIT);
    return new Set(open.flatMap((settlement) => settlement.entry_ids));
  }

  /** The account's positive entries that no submitted or open settlement covers. */
  async function payableEntries(pk: string, reserved: Set<string>): Promise<LedgerEntry[]> {
    return (await ledger.unsettled(pk)).filter((e) => e.amount_units > 0 && !reserved.has(e.id));
  }

  async function memoOfJob(jobId: string): Promise<string> {
    const hash = deps.jobHashOf ? ((await deps.jobHashOf(jobId))?.toLowerCase() ?? null) : null;
    if (isHex(hash, 32)) return hash;
    logger.warn({ job_id: jobId }, 'job hash unknown: the settlement memo is a hash of the job id');
    return fallbackJobMemo(jobId);
  }

  function newSettlement(
    id: string,
    entries: LedgerEntry[],
    payees: Record<string, number>,
    memoHex: string,
  ): LedgerSettlement {
    return {
      version: 1,
      id,
      entry_ids: entries.map((e) => e.id),
      payees,
      ...newSubmission(),
      memo_hash: memoHex,
      at: iso(),
    };
  }

  async function settleOneJob(jobId: string): Promise<LedgerSettlement[]> {
    const id = jobSettlementId(jobId);
    return withLock(async () => {
      const existing = await ledger.settlement(id);
      if (existing !== null) return existing.status === 'submitted' ? [existing] : [await drive(existing)];

      const reserved = await reservedEntryIds();
      const candidates = (await ledger.jobEntries(jobId)).filter(
        (e) => e.amount_units > 0 && PAYEE_KINDS.has(e.kind) && e.account_pk !== payer.publicKey && !reserved.has(e.id),
      );
      // An entry a balance payout already paid (mode switched) must not be paid again.
      const unsettledIds = new Set<string>();
      for (const pk of new Set(candidates.map((e) => e.account_pk))) {
        for (const e of await ledger.unsettled(pk)) unsettledIds.add(e.id);
      }
      const entries = candidates.filter((e) => unsettledIds.has(e.id));
      const total = entries.reduce((sum, e) => sum + e.amount_units, 0);
      if (entries.length === 0 || total < deps.thresholdUnits) return [];

      const owed = new Map<string, number>();
      for (const e of entries) owed.set(e.account_pk, (owed.get(e.account_pk) ?? 0) + e.amount_units);
      const payees: Record<string, number> = {};
      for (const [pk, units] of owed) if (payableUnits(units) > 0) payees[pk] = payableUnits(units);
      if (Object.keys(payees).length === 0) return [];
      if (Object.keys(payees).length > MAX_OPS) throw new RangeError(`job ${jobId} has more than ${MAX_OPS} payees`);
      const dust = total - Object.values(payees).reduce((a, b) => a + b, 0);
      if (dust > 0) logger.info({ id, dust_units: dust }, 'rounded the payments down to whole stroops');

      const record = newSettlement(id, entries, payees, await memoOfJob(jobId));
      return [await drive(record)];
    });
  }

  async function settleAccount(pk: string): Promise<LedgerSettlement | null> {
    if (pk === payer.publicKey) return null;
    return withLock(async () => {
      // Read inside the lock: a payout that just failed still reserves its entries.
      const reserved = await reservedEntryIds();
      const entries = await payableEntries(pk, reserved);
      const total = entries.reduce((sum, e) => sum + e.amount_units, 0);
      if (entries.length === 0 || total < deps.thresholdUnits || payableUnits(total) === 0) return null;
      const id = await nextBalanceId(pk);
      const paid = payableUnits(total);
      if (total > paid) logger.info({ id, dust_units: total - paid }, 'rounded the payment down to whole stroops');
      return drive(newSettlement(id, entries, { [pk]: paid }, balanceMemo(id)));
    });
  }

  /** `balance:<pk>:<n>` with n one past the account's latest payout (probed once per process, then counted). */
  async function nextBalanceId(pk: string): Promise<string> {
    let n = nextBalanceIndex.get(pk) ?? 1;
    while ((await ledger.settlement(`balance:${pk}:${n}`)) !== null) n++;
    nextBalanceIndex.set(pk, n + 1);
    return `balance:${pk}:${n}`;
  }

  async function retryOpen(): Promise<LedgerSettlement[]> {
    if (!enabled) return [];
    const out: LedgerSettlement[] = [];
    for (const open of await ledger.openSettlements(OPEN_SCAN_LIMIT)) {
      const driven = await withLock(async () => {
        const latest = await ledger.settlement(open.id); // a job hook may have finished it meanwhile
        if (latest === null || latest.status === 'submitted') return latest;
        return drive(latest);
      });
      if (driven !== null) out.push(driven);
    }
    return out;
  }

  async function settleBalances(accounts?: string[]): Promise<LedgerSettlement[]> {
    if (!enabled) return [];
    await retryOpen();
    const targets = new Set(accounts ?? [...((await deps.listAccounts?.()) ?? []), ...seenAccounts]);
    const out: LedgerSettlement[] = [];
    for (const pk of [...targets].sort()) {
      const settled = await settleAccount(pk);
      if (settled !== null) out.push(settled);
    }
    return out;
  }

  let sweeping: RepeatingTask | undefined;

  return {
    async settleJob(jobId) {
      if (!enabled) return [];
      if (deps.mode === 'job') {
        // Payees of a job below the threshold are paid later by the balance sweep: remember them.
        for (const e of await ledger.jobEntries(jobId)) if (e.amount_units > 0) seenAccounts.add(e.account_pk);
        return settleOneJob(jobId);
      }
      const payees = new Set(
        (await ledger.jobEntries(jobId))
          .filter((e) => e.amount_units > 0 && PAYEE_KINDS.has(e.kind) && e.account_pk !== payer.publicKey)
          .map((e) => e.account_pk),
      );
      const out: LedgerSettlement[] = [];
      for (const pk of [...payees].sort()) {
        seenAccounts.add(pk);
        const settled = await settleAccount(pk);
        if (settled !== null) out.push(settled);
      }
      return out;
    },

    settleBalances,
    retryOpen,

    start(intervalMs = DEFAULT_SETTLEMENT_SWEEP_MS) {
      if (!enabled || sweeping !== undefined) return;
      sweeping = startRepeatingTask(
        intervalMs,
        async () => {
          await settleBalances();
          await deps.alsoRetry?.();
        },
        (error) =>
          logger.error({ err: error instanceof Error ? error.message : String(error) }, 'settlement sweep failed'),
      );
    },

    async stop() {
      const task = sweeping;
      sweeping = undefined;
      await task?.stop();
    },
  };
}
