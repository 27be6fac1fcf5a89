/**
 * Telemetry ingest and listing (docs/protocol.md §2.10). Each accepted reading is one `iot/telemetry` proof
 * record, addressed by the device's cell and the epoch of `observed_at`, written by this node's key (the node
 * verified the device's signature; the record's payload names the device key and carries the batch's hash and
 * the device's signature over it). Its id derives from (device, quantity, observed_at), so a reading sent twice
 * is stored once.
 *
 * A writer's records never go back to an epoch it has moved past (store/record-append.ts: a seal covers gapless
 * seqs), so a reading is accepted for the open epoch, or for the previous one while this node has written
 * nothing later; the store refuses the rest (`reading_too_old`).
 */
import type { KeyPair } from '../../core/identity.js';
import { ServiceError } from '../../core/errors.js';
import { epochAt } from '../../core/epoch.js';
import type { ProofRecord } from '../../core/proof-types.js';
import { checkRecord } from '../../core/proof-record.js';
import {
  checkReading,
  isRefusal,
  MAX_READINGS_PER_DEVICE_HOUR,
  telemetryPayloadOf,
  telemetryRecordId,
  type CheckedReading,
  type ReadingInput,
  type ReadingRefusal,
  type TelemetryPayload,
} from '../../core/telemetry.js';
import { rateWindow } from '../../core/gates/delegation.js';
import type { NewRecord, ProofStore } from '../../store/proof-store.js';
import type { RateLimitStore } from '../../store/types.js';

export interface TelemetryDeps {
  store: ProofStore;
  signer: KeyPair;
  clock: () => number;
  genesisMs: number;
  epochMs: number;
  rateLimits: RateLimitStore;
  /** Accepted readings per device per hour; default MAX_READINGS_PER_DEVICE_HOUR. */
  readingsPerHour?: number;
}

export interface TelemetryBatch {
  devicePk: string;
  cell: string;
  readings: readonly ReadingInput[];
  /** SHA-256 of the JCS of the signed body, and the device's signature. */
  requestHash: string;
  signature: string;
}

export interface AcceptedReading {
  index: number;
  record_id: string;
  epoch: number;
  /** True when the reading was already stored (this batch or an earlier one): nothing new was written. */
  duplicate: boolean;
}

export interface IngestResult {
  accepted: AcceptedReading[];
  refused: ReadingRefusal[];
}

export interface TelemetryQuery {
  cell: string;
  quantity?: string | undefined;
  fromMs?: number | undefined;
  toMs?: number | undefined;
  limit: number;
  cursor?: string | undefined;
}

export interface StoredReading {
  record: ProofRecord;
  payload: TelemetryPayload;
}

/** Reads every telemetry record of `cell` over the epochs, verified (core checkRecord): the fusion step's input. */
export type TelemetrySource = (cell: string, epochFrom: number, epochTo: number) => Promise<ProofRecord[]>;

const PAGE = 1000;
/** Most records one fusion may read: past it the step fails rather than hold the worker for minutes. */
export const MAX_FUSION_RECORDS = 100_000;

export function createTelemetryActivities(deps: TelemetryDeps) {
  const perHour = deps.readingsPerHour ?? MAX_READINGS_PER_DEVICE_HOUR;

  return {
    async ingest(batch: TelemetryBatch): Promise<IngestResult> {
      const now = deps.clock();
      const current = epochAt(now, deps.genesisMs, deps.epochMs);
      const sealed = await deps.store.latestSeal(deps.signer.publicKey);
      const oldestEpoch = Math.max(current - 1, sealed === null ? 0 : sealed.epoch + 1);
      const clock = { nowMs: now, genesisMs: deps.genesisMs, epochMs: deps.epochMs, oldestEpoch };
      const refused: ReadingRefusal[] = [];
      const checked: CheckedReading[] = [];
      for (const [index, reading] of batch.readings.entries()) {
        const outcome = checkReading(reading, index, clock);
        if (isRefusal(outcome)) refused.push(outcome);
        else checked.push(outcome);
      }
      // The per-device budget, counted reading by reading so a partly over-budget batch keeps its first readings.
      const window = rateWindow(now, deps.genesisMs);
      const within: CheckedReading[] = [];
      for (const reading of checked) {
        const count = await deps.rateLimits.increment(
          `telemetry:${batch.devicePk}`,
          window.start,
          window.end - window.start,
        );
        if (count > perHour) {
          refused.push({
            index: reading.index,
            code: 'rate_limit',
            detail: `a device may have ${perHour} readings accepted per hour; retry after ${new Date(window.end).toISOString()}`,
          });
        } else within.push(reading);
      }
      const writtenAt = new Date(now).toISOString();
      const accepted: AcceptedReading[] = [];
      // Oldest epoch first: once this writer has written the open epoch, it cannot go back.
      const epochs = [...new Set(within.map((r) => r.epoch))].sort((a, b) => a - b);
      for (const epoch of epochs) {
        const group = within.filter((r) => r.epoch === epoch);
        const entries: NewRecord[] = group.map((r) => ({
          id: telemetryRecordId(batch.devicePk, r.quantity, r.observed_at),
          h3_cell: batch.cell,
          epoch,
          collection_type: 'telemetry',
          payload_type: 'iot/telemetry',
          payload: {
            device_pk: batch.devicePk,
            h3_cell: batch.cell,
            quantity: r.quantity,
            value: r.value,
            unit: r.unit,
            observed_at: r.observed_at,
            batch: { request_hash: batch.requestHash, signature: batch.signature },
          } satisfies TelemetryPayload,
          written_at: writtenAt,
        }));
        // Already stored (an earlier send, or a replay of this one): answered as a duplicate.
        const stored = new Set<string>();
        for (const entry of entries) if ((await deps.store.getRecord(entry.id)) !== null) stored.add(entry.id);
        let records: ProofRecord[];
        try {
          records = await deps.store.appendRecords(deps.signer, entries);
        } catch (error) {
          if (!(error instanceof ServiceError) || error.code !== 'epoch_sealed') throw error;
          for (const r of group) {
            refused.push({
              index: r.index,
              code: 'reading_too_old',
              detail: `the proof store no longer accepts epoch ${epoch} (this node's records have moved on)`,
            });
          }
          continue;
        }
        records.forEach((record, i) => {
          const sent = group[i]!;
          const payload = telemetryPayloadOf(record.payload);
          // The device already reported this instant with another value: the stored reading stands.
          if (payload !== null && payload.value !== sent.value) {
            refused.push({
              index: sent.index,
              code: 'record_conflict',
              detail: `${sent.quantity} at ${sent.observed_at} is already stored with the value ${payload.value} (${record.id})`,
            });
            return;
          }
          // The same reading twice in one batch: the second is the duplicate.
          const seen = accepted.some((a) => a.record_id === record.id);
          accepted.push({
            index: sent.index,
            record_id: record.id,
            epoch,
            duplicate: stored.has(entries[i]!.id) || seen,
          });
        });
      }
      accepted.sort((a, b) => a.index - b.index);
      refused.sort((a, b) => a.index - b.index);
      return { accepted, refused };
    },

    /** GET /v1/telemetry: readings of `cell` (H3 containment), optionally one quantity, phenomenon time in [from, to). */
    async list(query: TelemetryQuery): Promise<{ readings: StoredReading[]; nextCursor: string | null }> {
      // No reading is older than the epoch genesis (ingest refuses them): a window ending before it holds none.
      if (query.toMs !== undefined && query.toMs <= deps.genesisMs) return { readings: [], nextCursor: null };
      const fromMs = query.fromMs === undefined ? undefined : Math.max(query.fromMs, deps.genesisMs);
      const page = await deps.store.queryRecords({
        cell: query.cell,
        collection: 'telemetry',
        ...(fromMs === undefined ? {} : { epochStart: epochAt(fromMs, deps.genesisMs, deps.epochMs) }),
        ...(query.toMs === undefined ? {} : { epochEnd: epochAt(query.toMs - 1, deps.genesisMs, deps.epochMs) }),
        limit: query.limit,
        ...(query.cursor === undefined ? {} : { cursor: query.cursor }),
      });
      const readings: StoredReading[] = [];
      for (const record of page.records) {
        const payload = telemetryPayloadOf(record.payload);
        if (payload === null) continue;
        if (query.quantity !== undefined && payload.quantity !== query.quantity) continue;
        const at = Date.parse(payload.observed_at);
        if (query.fromMs !== undefined && at < query.fromMs) continue;
        if (query.toMs !== undefined && at >= query.toMs) continue;
        readings.push({ record, payload });
      }
      return { readings, nextCursor: page.nextCursor };
    },

    /** The fusion step's source on the gateway: every telemetry record of the cell and epochs, verified. */
    source: storeTelemetrySource(deps.store),
  };
}

export type TelemetryActivities = ReturnType<typeof createTelemetryActivities>;

/** Telemetry records straight from a proof store, each re-checked (hash and writer signature). */
export function storeTelemetrySource(store: ProofStore): TelemetrySource {
  return async (cell, epochFrom, epochTo) => {
    const out: ProofRecord[] = [];
    let cursor: string | undefined;
    do {
      const page = await store.queryRecords({
        cell,
        collection: 'telemetry',
        epochStart: epochFrom,
        epochEnd: epochTo,
        limit: PAGE,
        ...(cursor === undefined ? {} : { cursor }),
      });
      for (const record of page.records) if (checkRecord(record).ok) out.push(record);
      if (out.length > MAX_FUSION_RECORDS) {
        throw new ServiceError('invalid_request', `more than ${MAX_FUSION_RECORDS} readings in the window: narrow it`);
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
    return out;
  };
}
