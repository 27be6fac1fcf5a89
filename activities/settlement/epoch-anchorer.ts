/**
 * External anchoring of sealed epoch roots (docs/protocol.md §1.12 lists it as planned). After a central
 * epoch seal, one Stellar transaction from the signer's account carries a manage_data operation named
 * `epoch:<n>` whose value is the 32 raw bytes of the seal's Merkle root; its memo is a hash of
 * (sealer, epoch, root), so a lost response can be found again. Anchors follow the same pending →
 * submitted protocol as payments (submission-driver.ts), keyed by sealer_pk + epoch: anchoring a seal twice
 * submits once.
 *
 * Anyone can then check a root against the ledger without trusting us: `verifyAnchorOnHorizon` reads the
 * transaction's operations from any Horizon. Note that each `epoch:<n>` data entry stays on the account and
 * raises its minimum balance (a base reserve per entry); verification reads the transaction, not the entry,
 * so an operator may delete old entries without invalidating anchors.
 */
import {
  Account,
  BASE_FEE,
  Memo,
  Networks,
  Operation,
  TimeoutInfinite,
  TransactionBuilder,
} from '@stellar/stellar-sdk';
import { ServiceError } from '../../core/errors.js';
import { sha256Hex } from '../../core/hash.js';
import { isHex } from '../../core/hex.js';
import type { KeyPair } from '../../core/identity.js';
import type { EpochAnchor } from '../../core/ledger-types.js';
import type { LedgerStore } from '../../store/ledger-store.js';
import type { HorizonClient } from './horizon.js';
import { stellarAddress, stellarKeypair } from './stellar-keys.js';
import {
  createKeyedLock,
  type KeyedLock,
  driveSubmission,
  newSubmission,
  sleepMs,
  type RetryPolicy,
  type SettlementLogger,
  type SubmissionState,
} from './submission-driver.js';

/** What is anchored: a seal (core/proof-types.ts Seal has `merkle_root`) or any {sealer_pk, epoch, root}. */
export interface AnchorableSeal {
  sealer_pk: string;
  epoch: number;
  merkle_root?: string;
  root?: string;
}

export interface EpochAnchorerDeps {
  ledger: LedgerStore;
  horizon: HorizonClient;
  /** The anchoring account's key (the gateway node's key). */
  signer: KeyPair;
  /** Default Networks.TESTNET. */
  networkPassphrase?: string;
  clock: () => number;
  logger: SettlementLogger;
  retry: RetryPolicy;
  /** Fee per operation in stroops; default BASE_FEE (100). */
  baseFee?: string;
  memoSearchRecords?: number;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  /** Shared with the settlement service when both sign with one account (see SettlementServiceDeps.payerLock). */
  payerLock?: KeyedLock;
}

export interface EpochAnchorer {
  /**
   * Anchors one seal's root, or returns its existing anchor (submitted: nothing is sent; pending or failed:
   * re-driven). Horizon failures end in a `failed` anchor (not thrown); a different root for an anchored
   * sealer + epoch is ServiceError('record_conflict').
   */
  anchor(seal: AnchorableSeal): Promise<EpochAnchor>;
  /** The sealer hook (`onSealed(await sealDueEpochs(…))`): anchors each seal in order; never throws. */
  onSealed(seals: readonly AnchorableSeal[]): Promise<void>;
  /** Re-drives every pending or failed anchor, oldest first. */
  retryOpen(): Promise<EpochAnchor[]>;
  /**
   * Anchors this sealer's newest seals that have no anchor at all: a process killed between storing its seals
   * and handing them to onSealed left them unanchored, and the restarted sealer starts after them. Cheap when
   * nothing is missing (one lookup of the newest seal); otherwise it walks back from the newest seal to the
   * first anchored one, at most CATCH_UP_SEALS, and anchors those oldest first. Never throws (logged).
   */
  anchorMissing(seals: SealSource): Promise<number>;
}

/** Where a sealer's seals are read (the proof store's latestSeal / sealsOf for one sealer). */
export interface SealSource {
  latest(): Promise<AnchorableSeal | null>;
  /** Every seal, in any order. */
  all(): Promise<readonly AnchorableSeal[]>;
}

/**
 * How far back anchorMissing looks: two days of hourly seals. Turning ANCHOR_EPOCHS on for a node that sealed
 * for a year must not pay for a year of transactions and data-entry reserves at once.
 */
export const CATCH_UP_SEALS = 48;

export const anchorDataName = (epoch: number): string => `epoch:${epoch}`;

/** The anchor transaction's memo: binds sealer, epoch and root (empty epochs share a root, so root alone won't do). */
export const anchorMemo = (sealerPk: string, epoch: number, root: string): string =>
  sha256Hex(`geofabric/anchor\n${sealerPk}\n${epoch}\n${root}`);

const OPEN_SCAN_LIMIT = 1000;

function rootOf(seal: AnchorableSeal): string {
  const root = seal.merkle_root ?? seal.root;
  if (!isHex(root, 32)) throw new RangeError('seal root must be 64 lowercase hex');
  if (!Number.isSafeInteger(seal.epoch) || seal.epoch < 0)
    throw new RangeError('seal epoch must be a non-negative integer');
  return root;
}

export function createEpochAnchorer(deps: EpochAnchorerDeps): EpochAnchorer {
  const { ledger, horizon, logger } = deps;
  const keypair = stellarKeypair(deps.signer);
  const source = stellarAddress(deps.signer.publicKey);
  const networkPassphrase = deps.networkPassphrase ?? Networks.TESTNET;
  const baseFee = deps.baseFee ?? BASE_FEE;
  const payerLock = deps.payerLock ?? createKeyedLock();
  // One key for all: anchors share the signer's sequence numbers (and, via payerLock, the settlement service's).
  const withLock = <T>(work: () => Promise<T>): Promise<T> => payerLock(deps.signer.publicKey, work);
  const iso = () => new Date(deps.clock()).toISOString();

  function build(anchor: EpochAnchor, sequence: string) {
    const tx = new TransactionBuilder(new Account(source, sequence), { fee: baseFee, networkPassphrase })
      .addOperation(
        Operation.manageData({ name: anchorDataName(anchor.epoch), value: Buffer.from(anchor.root, 'hex') }),
      )
      .addMemo(Memo.hash(anchorMemo(anchor.sealer_pk, anchor.epoch, anchor.root)))
      .setTimeout(TimeoutInfinite) // resubmittable until its sequence is spent (see submission-driver.ts)
      .build();
    tx.sign(keypair);
    return { tx_hash: tx.hash().toString('hex'), envelope_xdr: tx.toXDR() };
  }

  async function drive(anchor: EpochAnchor): Promise<EpochAnchor> {
    let latest = anchor;
    const final = await driveSubmission(anchor, {
      horizon,
      source,
      memoHex: anchorMemo(anchor.sealer_pk, anchor.epoch, anchor.root),
      build: (sequence) => build(anchor, sequence),
      save: async (state: SubmissionState) => {
        latest = { ...latest, ...state, at: iso() };
        await ledger.recordAnchor(latest);
      },
      retry: deps.retry,
      sleep: deps.sleep ?? sleepMs,
      random: deps.random ?? Math.random,
      logger,
      label: `anchor:${anchor.sealer_pk}:${anchor.epoch}`,
      memoSearchRecords: deps.memoSearchRecords,
    });
    latest = { ...latest, ...final };
    const log = { sealer_pk: latest.sealer_pk, epoch: latest.epoch, tx_hash: latest.tx_hash, ledger: latest.ledger };
    if (latest.status === 'submitted') logger.info(log, 'epoch root anchored');
    else logger.warn({ ...log, error: latest.error }, 'epoch root not anchored yet; retryOpen will re-drive it');
    return latest;
  }

  async function anchor(seal: AnchorableSeal): Promise<EpochAnchor> {
    const root = rootOf(seal);
    return withLock(async () => {
      const existing = await ledger.anchor(seal.sealer_pk, seal.epoch);
      if (existing !== null) {
        if (existing.root !== root) {
          throw new ServiceError(
            'record_conflict',
            `epoch ${seal.epoch} of ${seal.sealer_pk} was anchored with another root`,
          );
        }
        return existing.status === 'submitted' ? existing : drive(existing);
      }
      return drive({
        version: 1,
        sealer_pk: seal.sealer_pk,
        epoch: seal.epoch,
        root,
        ...newSubmission(),
        at: iso(),
      });
    });
  }

  const anchored = async (seal: AnchorableSeal) => (await ledger.anchor(seal.sealer_pk, seal.epoch)) !== null;

  async function onSealed(seals: readonly AnchorableSeal[]): Promise<void> {
    for (const seal of seals) {
      try {
        await anchor(seal);
      } catch (error) {
        logger.error(
          {
            sealer_pk: seal.sealer_pk,
            epoch: seal.epoch,
            err: error instanceof Error ? error.message : String(error),
          },
          'epoch anchoring failed',
        );
      }
    }
  }

  return {
    anchor,
    onSealed,

    async anchorMissing(source) {
      try {
        const newest = await source.latest();
        if (newest === null || (await anchored(newest))) return 0;
        const recent = [...(await source.all())].sort((a, b) => b.epoch - a.epoch).slice(0, CATCH_UP_SEALS);
        const missing: AnchorableSeal[] = [];
        for (const seal of recent) {
          if (await anchored(seal)) break;
          missing.push(seal);
        }
        logger.warn({ sealer_pk: newest.sealer_pk, seals: missing.length }, 'anchoring seals left unanchored');
        await onSealed(missing.reverse());
        return missing.length;
      } catch (error) {
        logger.error({ err: error instanceof Error ? error.message : String(error) }, 'anchor catch-up failed');
        return 0;
      }
    },

    async retryOpen() {
      const out: EpochAnchor[] = [];
      for (const open of await ledger.openAnchors(OPEN_SCAN_LIMIT)) {
        const driven = await withLock(async () => {
          const latest = await ledger.anchor(open.sealer_pk, open.epoch);
          if (latest === null || latest.status === 'submitted') return latest;
          return drive(latest);
        });
        if (driven !== null) out.push(driven);
      }
      return out;
    },
  };
}

/** What GET /store/proof/{id} shows of an anchor: null until it is submitted. */
export function anchorView(anchor: EpochAnchor | null): { tx_hash: string; ledger: number | null } | null {
  if (anchor === null || anchor.status !== 'submitted' || anchor.tx_hash === null) return null;
  return { tx_hash: anchor.tx_hash, ledger: anchor.ledger };
}

/**
 * Checks an anchor against Horizon: the transaction exists and succeeded, and one of its operations is a
 * manage_data named `epoch:<n>` whose value is exactly the 32 root bytes, from `sourcePk`'s account (64-hex
 * key) when given. Network failures are `ok: false` with the reason (the caller may retry).
 */
export async function verifyAnchorOnHorizon(input: {
  horizon: HorizonClient;
  txHash: string;
  epoch: number;
  root: string;
  sourcePk?: string;
}): Promise<{ ok: boolean; ledger?: number; detail: string }> {
  const { horizon, txHash, epoch, root } = input;
  if (!isHex(txHash, 32)) return { ok: false, detail: 'transaction hash must be 64 lowercase hex' };
  if (!isHex(root, 32)) return { ok: false, detail: 'root must be 64 lowercase hex' };
  let expectedSource: string | undefined;
  if (input.sourcePk !== undefined) {
    try {
      expectedSource = stellarAddress(input.sourcePk);
    } catch {
      return { ok: false, detail: 'source key must be 64 lowercase hex' };
    }
  }
  try {
    const tx = await horizon.transaction(txHash);
    if (tx === null) return { ok: false, detail: `transaction ${txHash} not found on ${horizon.url}` };
    if (!tx.successful) return { ok: false, ledger: tx.ledger, detail: `transaction ${txHash} failed on the ledger` };
    const ops = (await horizon.operations(txHash)) ?? [];
    const name = anchorDataName(epoch);
    const named = ops.filter((op) => op.type === 'manage_data' && op.name === name);
    if (named.length === 0) return { ok: false, ledger: tx.ledger, detail: `no manage_data ${name} in ${txHash}` };
    const matching = named.filter((op) => op.value != null && Buffer.from(op.value, 'base64').toString('hex') === root);
    if (matching.length === 0) {
      return { ok: false, ledger: tx.ledger, detail: `${name} in ${txHash} holds a different root` };
    }
    if (expectedSource !== undefined) {
      const fromSource = matching.some((op) => (op.source_account ?? tx.source_account) === expectedSource);
      if (!fromSource) return { ok: false, ledger: tx.ledger, detail: `${name} was not written by ${expectedSource}` };
    }
    return { ok: true, ledger: tx.ledger, detail: `${name} = ${root} in ledger ${tx.ledger}` };
  } catch (error) {
    return { ok: false, detail: `horizon check failed: ${error instanceof Error ? error.message : String(error)}` };
  }
}
