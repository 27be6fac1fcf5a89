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
export async function auditStore(store: ProofStore, options: { sealedThrough?: number } = {}): Promise<AuditReport> {
  const report: AuditReport = { writers: 0, records_checked: 0, seals_checked: 0, problems: [] };
  const epochsWithRecords = new Map<string, Set<number>>();

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
    cursor = page.nextCursor;
  } while (cursor !== null);

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
        continue;
      }
      const covers = checkSealCoversRecords(seal, await store.recordsOfEpoch(writer, seal.epoch));
      if (!covers.ok) report.problems.push({ writer, epoch: seal.epoch, problem: covers.detail });
    }
    const through = options.sealedThrough;
    for (const epoch of [...(epochsWithRecords.get(writer) ?? [])].sort((a, b) => a - b)) {
      if (through !== undefined && epoch <= through && !sealed.has(epoch)) {
        report.problems.push({ writer, epoch, problem: `epoch ${epoch} holds records but has no seal` });
      }
    }
  }
  return report;
}
