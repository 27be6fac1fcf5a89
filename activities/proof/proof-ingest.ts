import { ServiceError, type ErrorCode } from '../../core/errors.js';
import { bytesToHex } from '../../core/hex.js';
import { merkleLevels } from '../../core/merkle/tree.js';
import { verifyProofBundle, type ProofBundle } from '../../core/proof-bundle.js';
import { checkRecord, recordLeaf } from '../../core/proof-record.js';
import { GENESIS_PREV_HASH, type ProofRecord, type Seal } from '../../core/proof-types.js';
import { checkSeal, checkSealCoversRecords } from '../../core/seal.js';
import { checkEpochEnded, checkRecordEpoch, DEFAULT_MAX_BACKFILL_EPOCHS } from '../../core/sync-window.js';
import type { ProofStore } from '../../store/proof-store.js';
import type { WriterRole } from './sync-writers.js';

export type Verdict =
  | { id: string; status: 'inserted' | 'duplicate' }
  | { id: string; status: 'rejected'; error: ErrorCode; detail: string };

/** A seal's id in responses: sealer and epoch. */
export const sealId = (seal: Pick<Seal, 'sealer_pk' | 'epoch'>): string => `${seal.sealer_pk}:${seal.epoch}`;

const rawId = (value: unknown, index: number, key: string): string => {
  const id = (value as Record<string, unknown> | null)?.[key];
  return typeof id === 'string' || typeof id === 'number' ? String(id) : `#${index}`;
};

/** A refused seal is named as the sync agent looks it up (`sealer_pk:epoch`) whenever it carries both. */
const rawSealId = (value: unknown, index: number): string => {
  const { sealer_pk: pk, epoch } = (value as Record<string, unknown> | null) ?? {};
  return typeof pk === 'string' && (typeof epoch === 'number' || typeof epoch === 'string')
    ? `${pk}:${epoch}`
    : `#${index}`;
};

export interface ProofIngestDeps {
  store: ProofStore;
  /** The role of a key at this store (sync-writers.ts); null: it may not push. */
  roleOf: (pk: string) => Promise<WriterRole | null>;
  clock: () => number;
  genesisMs: number;
  /** Epoch length: the hour unless a development node shortened it. */
  epochMs?: number | undefined;
  /** SYNC_MAX_BACKFILL_HOURS: the oldest epoch (back from the open one) a push may bring, with its seal. */
  maxBackfillEpochs?: number;
  /** Charges each allowed push to its pusher (sync-writers.ts createSyncQuota); throws when over the bound. */
  quota?: { charge(pk: string, items: number, bytes: number): void };
}

/** Who pushed (gate 1 verified the signature) and, with records, the seals that vouch for older epochs. */
export interface Push {
  pusher: string;
  seals?: readonly unknown[];
}

/**
 * The central store's intake (`POST /store/sync`, `POST /store/epochs`) and proof service
 * (`GET /store/proof`). Nothing is trusted: every record and seal is re-hashed and its signature checked,
 * and a seal is accepted only over exactly the records it claims, chained to the sealer's previous seal.
 * Only node keys and registered workers push; a worker pushes only what it wrote, and `compute/job` records
 * (a job's proof) are taken only from node keys. Records only of epochs near now (core/sync-window.ts);
 * seals only of epochs that have ended.
 */
export function createProofIngest(deps: ProofIngestDeps) {
  const { store } = deps;
  const maxBackfillEpochs = deps.maxBackfillEpochs ?? DEFAULT_MAX_BACKFILL_EPOCHS;

  /** The pusher's role, the push charged to it; a key that may not write is refused before anything is read. */
  async function pusherRole(pusher: string, items: readonly unknown[]): Promise<WriterRole> {
    const role = await deps.roleOf(pusher);
    if (role === null) {
      throw new ServiceError(
        'writer_not_allowed',
        `key ${pusher} may not write to this proof store: register it as a worker, or list it in SYNC_NODE_KEYS`,
      );
    }
    deps.quota?.charge(pusher, items.length, Buffer.byteLength(JSON.stringify(items)));
    return role;
  }

  /** Why `writer` may not write what it signed, pushed by a pusher of `role`; null when it may. */
  async function writerRefusal(
    role: WriterRole,
    pusher: string,
    writer: string,
    what: string,
    /** What only a node key may write (e.g. `compute/job records`), or null. */
    nodeOnly: string | null,
  ): Promise<string | null> {
    if (role === 'worker' && writer !== pusher) return `${what}: a worker pushes only what it wrote itself`;
    const writerRole = writer === pusher ? role : await deps.roleOf(writer);
    if (nodeOnly !== null && writerRole !== 'node') return `${what}: only a node key writes ${nodeOnly}`;
    return null;
  }

  async function ingestRecords(raw: readonly unknown[], push: Push): Promise<Verdict[]> {
    const role = await pusherRole(push.pusher, [...raw, ...(push.seals ?? [])]);
    const nowMs = deps.clock();
    const window = { nowMs, genesisMs: deps.genesisMs, maxBackfillEpochs, epochMs: deps.epochMs };
    // Seals brought along vouch for records older than the window: only valid seals of ended epochs count.
    const vouching = new Map<string, Seal>();
    for (const value of push.seals ?? []) {
      const checked = checkSeal(value);
      // A writer's own seal vouches for its records; a custodial one is checked on its own below.
      const own = checked.ok && checked.value.custodian_pk === undefined;
      if (own && checkEpochEnded(checked.value.epoch, nowMs, deps.genesisMs, deps.epochMs).ok) {
        vouching.set(sealId(checked.value), checked.value);
      }
    }
    const verdicts: Verdict[] = new Array<Verdict>(raw.length);
    const valid: { index: number; record: Parameters<ProofStore['ingestRecords']>[0][number] }[] = [];
    for (const [index, value] of raw.entries()) {
      const reject = (error: ErrorCode, detail: string) => {
        verdicts[index] = { id: rawId(value, index, 'id'), status: 'rejected', error, detail };
      };
      const checked = checkRecord(value);
      if (!checked.ok) {
        reject(checked.error, checked.detail);
        continue;
      }
      const record = checked.value;
      const { pk, epoch } = record.address;
      const refusal = await writerRefusal(role, push.pusher, pk, `record ${record.id}`, nodeOnlyKind(record));
      if (refusal !== null) {
        reject('writer_not_allowed', refusal);
        continue;
      }
      const fresh = checkRecordEpoch(record, vouching.get(sealId({ sealer_pk: pk, epoch })), window);
      if (!fresh.ok) {
        reject(fresh.error, fresh.detail);
        continue;
      }
      valid.push({ index, record });
    }
    const outcomes = await store.ingestRecords(valid.map((v) => v.record));
    outcomes.forEach((outcome, i) => {
      verdicts[valid[i]!.index] = outcome;
    });
    return verdicts;
  }

  async function ingestSeal(value: unknown, role: WriterRole, pusher: string): Promise<Verdict> {
    const checked = checkSeal(value);
    if (!checked.ok) return { id: rawSealId(value, 0), status: 'rejected', ...checked };
    const seal = checked.value;
    const id = sealId(seal);
    const reject = (detail: string): Verdict => ({ id, status: 'rejected', error: 'seal_mismatch', detail });
    const refusal = await writerRefusal(role, pusher, seal.sealer_pk, `seal ${id}`, null);
    if (refusal !== null) return { id, status: 'rejected', error: 'writer_not_allowed', detail: refusal };
    // docs/protocol.md §12: only a node key is a custodian; a worker cannot vouch for itself under another key.
    if (seal.custodian_pk !== undefined && (await deps.roleOf(seal.custodian_pk)) !== 'node') {
      const detail = `seal ${id}: custodial seals are signed by a node key, not ${seal.custodian_pk}`;
      return { id, status: 'rejected', error: 'writer_not_allowed', detail };
    }
    const ended = checkEpochEnded(seal.epoch, deps.clock(), deps.genesisMs, deps.epochMs);
    if (!ended.ok) return { id, status: 'rejected', error: ended.error, detail: ended.detail };

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
  async function ingestSeals(raw: readonly unknown[], push: Push): Promise<Verdict[]> {
    const role = await pusherRole(push.pusher, raw);
    const order = raw.map((value, index) => ({ value, index })).sort((a, b) => bySealerThenEpoch(a.value, b.value));
    const verdicts: Verdict[] = new Array<Verdict>(raw.length);
    for (const { value, index } of order) verdicts[index] = await ingestSeal(value, role, push.pusher);
    return verdicts;
  }

  const proofOf = (recordId: string) => readProof(store, recordId);

  return { ingestRecords, ingestSeals, proofOf };
}

export type ProofIngest = ReturnType<typeof createProofIngest>;

/** The proof bundle of a stored record (its seal and audit path, re-verified); null when there is no such record. */
export async function readProof(store: ProofStore, recordId: string): Promise<ProofBundle | null> {
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

function bySealerThenEpoch(a: unknown, b: unknown): number {
  const x = a as Partial<Seal> | null;
  const y = b as Partial<Seal> | null;
  const sealers = String(x?.sealer_pk).localeCompare(String(y?.sealer_pk));
  return sealers !== 0 ? sealers : Number(x?.epoch ?? -1) - Number(y?.epoch ?? -1);
}

/**
 * What kind of record only a node key may write, or null: a job's proof (`compute/job`), and telemetry readings,
 * which fusion and receipts take as evidence of their devices only from the node (docs/protocol.md §2.10). The id
 * prefix counts too (`compute:<job_id>`, `telemetry:<hash>`), whatever collection or payload type a pusher claims.
 */
function nodeOnlyKind(record: ProofRecord): string | null {
  if (record.collection_type === 'compute_job' || record.id.startsWith('compute:')) return 'compute/job records';
  if (
    record.collection_type === 'telemetry' ||
    record.payload_type === 'iot/telemetry' ||
    record.id.startsWith('telemetry:')
  ) {
    return 'telemetry records';
  }
  return null;
}
