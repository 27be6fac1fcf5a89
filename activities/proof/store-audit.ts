import { checkRecord } from '../../core/proof-record.js';
import type { ProofRecord } from '../../core/proof-types.js';
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
  problems: AuditProblem[];
}

/**
 * Re-verifies a whole store without trusting it: every record's hash and writer signature, every seal's
 * hash and signature, each writer's seal chain (no edited or missing epoch), that every seal covers exactly
 * the records stored for its epoch (none changed, dropped, added or reordered), and that no epoch that
 * should be sealed by now (`sealedThrough`) holds unsealed records.
 */
export async function auditStore(
  store: ProofStore,
  options: { sealedThrough?: number; progress?: AuditProgress } = {},
): Promise<AuditReport> {
  const report: AuditReport = { writers: 0, records_checked: 0, seals_checked: 0, problems: [] };
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
    for (const seal of seals) {
      report.seals_checked += 1;
      sealed.add(seal.epoch);
      const checked = checkSeal(seal);
      if (!checked.ok) {
        report.problems.push({ writer, epoch: seal.epoch, problem: `seal: ${checked.detail}` });
        progress?.checked('seals', 1);
        continue;
      }
      const covers = checkSealCoversRecords(seal, await store.recordsOfEpoch(writer, seal.epoch));
      if (!covers.ok) report.problems.push({ writer, epoch: seal.epoch, problem: covers.detail });
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
