import { hexToBytes } from '../../core/hex.js';
import { verifyInclusion } from '../../core/merkle/inclusion.js';
import { checkRecord, recordLeaf } from '../../core/proof-record.js';
import type { ProofRecord, Seal } from '../../core/proof-types.js';
import { checkSeal, checkSealChain, checkSealCoversRecords } from '../../core/seal.js';
import type { ProofStore } from '../../store/proof-store.js';

export interface AuditProblem {
  writer?: string;
  epoch?: number;
  record_id?: string;
  problem: string;
}

/**
 * Progress of an audit (the CLI draws it). `start` opens a phase with the items it expects: for records, the
 * records the seals count (an estimate: unsealed records come on top); for seals, the seals stored.
 */
export interface AuditProgress {
  start(phase: 'records' | 'seals', expected: number): void;
  checked(phase: 'records' | 'seals', n: number): void;
  end(phase: 'records' | 'seals'): void;
}

export interface AuditReport {
  writers: number;
  records_checked: number;
  seals_checked: number;
  /**
   * Sealed epochs whose records this store let go once the central store held them whole (a worker's store,
   * docs/operations.md "Retention"): their seals are checked, and each record left against the seal's tree.
   */
  epochs_pruned: number;
  problems: AuditProblem[];
}

/**
 * Re-verifies a whole store without trusting it: every record's hash and writer signature, every seal's
 * hash and signature, each writer's seal chain (no edited or missing epoch), that every seal covers exactly
 * the records stored for its epoch (none changed, dropped, added or reordered), and that no epoch that
 * should be sealed by now (`sealedThrough`) holds unsealed records. Of an epoch the store pruned (`prunedEpochs`),
 * only what is left is checked: each remaining record must be in the seal's tree.
 */
export async function auditStore(
  store: ProofStore,
  options: { sealedThrough?: number; progress?: AuditProgress } = {},
): Promise<AuditReport> {
  const report: AuditReport = { writers: 0, records_checked: 0, seals_checked: 0, epochs_pruned: 0, problems: [] };
  const epochsWithRecords = new Map<string, Set<number>>();
  const { progress } = options;
  // Sizes for the progress only: the audit itself reads the seals again after the records, as before, so a
  // seal written meanwhile is seen.
  const expected = progress ? await expectedSizes(store) : { records: 0, seals: 0 };
  progress?.start('records', expected.records);

  let cursor: string | null = null;
  do {
    const page: { records: ProofRecord[]; nextCursor: string | null } = await store.queryRecords({
      limit: 1000,
      ...(cursor === null ? {} : { cursor }),
    });
    for (const record of page.records) {
      report.records_checked += 1;
      const checked = checkRecord(record);
      if (!checked.ok) {
        report.problems.push({
          writer: record.address?.pk,
          epoch: record.address?.epoch,
          record_id: record.id,
          problem: checked.detail,
        });
      }
      const epochs = epochsWithRecords.get(record.address.pk) ?? new Set<number>();
      epochs.add(record.address.epoch);
      epochsWithRecords.set(record.address.pk, epochs);
    }
    progress?.checked('records', page.records.length);
    cursor = page.nextCursor;
  } while (cursor !== null);
  progress?.end('records');

  progress?.start('seals', expected.seals);
  for (const writer of await store.writers()) {
    report.writers += 1;
    const seals = await store.sealsOf(writer);
    for (const { epoch, problem } of checkSealChain(seals)) report.problems.push({ writer, epoch, problem });
    const sealed = new Set<number>();
    const pruned = new Set((await store.prunedEpochs?.(writer)) ?? []);
    for (const seal of seals) {
      report.seals_checked += 1;
      sealed.add(seal.epoch);
      const checked = checkSeal(seal);
      if (!checked.ok) {
        report.problems.push({ writer, epoch: seal.epoch, problem: `seal: ${checked.detail}` });
        progress?.checked('seals', 1);
        continue;
      }
      const records = await store.recordsOfEpoch(writer, seal.epoch);
      if (pruned.has(seal.epoch)) {
        report.epochs_pruned += 1;
        const problem = await leftOutOfSeal(store, seal, records);
        if (problem !== null) report.problems.push({ writer, epoch: seal.epoch, problem });
      } else {
        const covers = checkSealCoversRecords(seal, records);
        if (!covers.ok) report.problems.push({ writer, epoch: seal.epoch, problem: covers.detail });
      }
      progress?.checked('seals', 1);
    }
    const through = options.sealedThrough;
    for (const epoch of [...(epochsWithRecords.get(writer) ?? [])].sort((a, b) => a - b)) {
      if (through !== undefined && epoch <= through && !sealed.has(epoch)) {
        report.problems.push({ writer, epoch, problem: `epoch ${epoch} holds records but has no seal` });
      }
    }
  }
  progress?.end('seals');
  return report;
}

/** Of an epoch pruned here, the first record left that is not in the seal's tree (its path read from the store). */
async function leftOutOfSeal(store: ProofStore, seal: Seal, records: readonly ProofRecord[]): Promise<string | null> {
  for (const record of records) {
    try {
      const sealed = await store.sealedPath(record);
      if (sealed === null) throw new Error('no sealed path');
      verifyInclusion(
        sealed.leafIndex,
        seal.record_count,
        recordLeaf(record),
        sealed.path,
        hexToBytes(seal.merkle_root),
      );
    } catch (error) {
      return `epoch ${seal.epoch} (pruned here): record ${record.id} is not in its seal: ${(error as Error).message}`;
    }
  }
  return null;
}

/** The seals stored and the records they count. */
async function expectedSizes(store: ProofStore): Promise<{ records: number; seals: number }> {
  let records = 0;
  let seals = 0;
  for (const writer of await store.writers()) {
    for (const seal of await store.sealsOf(writer)) {
      seals += 1;
      records += Number.isSafeInteger(seal.record_count) && seal.record_count > 0 ? seal.record_count : 0;
    }
  }
  return { records, seals };
}
