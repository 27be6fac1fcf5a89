import { ServiceError, type ErrorCode } from '../../core/errors.js';
import { bytesToHex } from '../../core/hex.js';
import { merkleLevels } from '../../core/merkle/tree.js';
import { verifyProofBundle, type ProofBundle } from '../../core/proof-bundle.js';
import { checkRecord, recordLeaf } from '../../core/proof-record.js';
import { GENESIS_PREV_HASH, type Seal } from '../../core/proof-types.js';
import { checkSeal, checkSealCoversRecords } from '../../core/seal.js';
import type { ProofStore } from '../../store/proof-store.js';

export type Verdict =
  | { id: string; status: 'inserted' | 'duplicate' }
  | { id: string; status: 'rejected'; error: ErrorCode; detail: string };

/** A seal's id in responses: sealer and epoch. */
export const sealId = (seal: Pick<Seal, 'sealer_pk' | 'epoch'>): string => `${seal.sealer_pk}:${seal.epoch}`;

const rawId = (value: unknown, index: number, key: string): string => {
  const id = (value as Record<string, unknown> | null)?.[key];
  return typeof id === 'string' || typeof id === 'number' ? String(id) : `#${index}`;
};

/**
 * The central store's intake (`POST /store/sync`, `POST /store/epochs`) and proof service
 * (`GET /store/proof`). Nothing is trusted: every record and seal is re-hashed and its signature checked,
 * and a seal is accepted only over exactly the records it claims, chained to the sealer's previous seal.
 */
export function createProofIngest(deps: { store: ProofStore }) {
  const { store } = deps;

  async function ingestRecords(raw: readonly unknown[]): Promise<Verdict[]> {
    const verdicts: Verdict[] = new Array<Verdict>(raw.length);
    const valid: { index: number; record: Parameters<ProofStore['ingestRecords']>[0][number] }[] = [];
    raw.forEach((value, index) => {
      const checked = checkRecord(value);
      if (checked.ok) valid.push({ index, record: checked.value });
      else
        verdicts[index] = {
          id: rawId(value, index, 'id'),
          status: 'rejected',
          error: checked.error,
          detail: checked.detail,
        };
    });
    const outcomes = await store.ingestRecords(valid.map((v) => v.record));
    outcomes.forEach((outcome, i) => {
      verdicts[valid[i]!.index] = outcome;
    });
    return verdicts;
  }

  async function ingestSeal(value: unknown): Promise<Verdict> {
    const checked = checkSeal(value);
    if (!checked.ok) return { id: rawId(value, 0, 'epoch'), status: 'rejected', ...checked };
    const seal = checked.value;
    const id = sealId(seal);
    const reject = (detail: string): Verdict => ({ id, status: 'rejected', error: 'seal_mismatch', detail });

    const existing = await store.getSeal(seal.sealer_pk, seal.epoch);
    if (existing) {
      return existing.seal_hash === seal.seal_hash
        ? { id, status: 'duplicate' }
        : reject(`a different seal of epoch ${seal.epoch} is already stored`);
    }
    const previous = seal.epoch > 0 ? await store.getSeal(seal.sealer_pk, seal.epoch - 1) : null;
    if (previous) {
      if (seal.prev_epoch_hash !== previous.seal_hash) {
        return reject(`prev_epoch_hash does not match the seal of epoch ${previous.epoch}`);
      }
    } else {
      const latest = await store.latestSeal(seal.sealer_pk);
      if (latest !== null) return reject(`the seal of epoch ${seal.epoch - 1} has not been received`);
      if (seal.prev_epoch_hash !== GENESIS_PREV_HASH) {
        return reject('first seal of this sealer must chain to the genesis hash; send earlier seals first');
      }
    }
    const records = await store.recordsOfEpoch(seal.sealer_pk, seal.epoch);
    const covers = checkSealCoversRecords(seal, records);
    if (!covers.ok) return reject(covers.detail);
    try {
      return { id, status: await store.putSeal(seal, merkleLevels(records.map(recordLeaf))) };
    } catch (error) {
      // The store refuses a seal a concurrent writer made stale (record count changed under it).
      if (error instanceof ServiceError && error.code === 'seal_mismatch') return reject(error.detail ?? error.message);
      throw error;
    }
  }

  /** Seals are taken oldest first per sealer, so a batch may carry consecutive epochs. */
  async function ingestSeals(raw: readonly unknown[]): Promise<Verdict[]> {
    const order = raw.map((value, index) => ({ value, index })).sort((a, b) => bySealerThenEpoch(a.value, b.value));
    const verdicts: Verdict[] = new Array<Verdict>(raw.length);
    for (const { value, index } of order) verdicts[index] = await ingestSeal(value);
    return verdicts;
  }

  async function proofOf(recordId: string): Promise<ProofBundle | null> {
    const record = await store.getRecord(recordId);
    if (!record) return null;
    const sealed = await store.sealedPath(record);
    if (!sealed) return { record, seal: null, proof: null, verified: false, pending: true };
    const bundle = {
      record,
      seal: sealed.seal,
      proof: { leaf_index: sealed.leafIndex, tree_size: sealed.seal.record_count, hashes: sealed.path.map(bytesToHex) },
    };
    return { ...bundle, verified: verifyProofBundle(bundle).verified };
  }

  return { ingestRecords, ingestSeals, proofOf };
}

export type ProofIngest = ReturnType<typeof createProofIngest>;

function bySealerThenEpoch(a: unknown, b: unknown): number {
  const x = a as Partial<Seal> | null;
  const y = b as Partial<Seal> | null;
  const sealers = String(x?.sealer_pk).localeCompare(String(y?.sealer_pk));
  return sealers !== 0 ? sealers : Number(x?.epoch ?? -1) - Number(y?.epoch ?? -1);
}
