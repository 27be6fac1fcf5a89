/**
 * Telemetry ingest and listing (docs/protocol.md §2.10). Each accepted reading is one `iot/telemetry` proof
 * record, addressed by the device's cell and the epoch of `observed_at`, written by this node's key (payload
 * version 2: the device's own signature over the reading statement, and the principal gate 3 traced the device
 * to). Its id derives from (device, quantity, observed_at), so a reading sent twice is stored once, and a
 * reading already stored costs nothing against the device's hourly budget (a replayed batch cannot spend it).
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
import { writerScopedId } from '../../store/record-append.js';
import {
  checkReading,
  isRefusal,
  MAX_READINGS_PER_DEVICE_HOUR,
  telemetryPayloadOf,
  telemetryRecordId,
  type CheckedReading,
  type LegacyTelemetryPayload,
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
  /**
   * The writers whose telemetry the fusion source reads (docs/protocol.md §2.10 rule 3): this node and its peer
   * node keys (SYNC_NODE_KEYS); default this node alone.
   */
  fusionWriters?: readonly string[];
}

export interface TelemetryBatch {
  devicePk: string;
  cell: string;
  readings: readonly ReadingInput[];
  /**
   * The voter the device acts for (docs/protocol.md §2.10): gate 3's human principal when the batch carried a
   * delegation certificate, else the device key itself.
   */
  principalPk: string;
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
  payload: TelemetryPayload | LegacyTelemetryPayload;
}

/**
 * Reads the telemetry records of `cell` over the epochs that its trusted writer wrote, each verified (core
 * checkRecord): the fusion step's candidates, which it still holds to core's provenReadingOf.
 */
export type TelemetrySource = (cell: string, epochFrom: number, epochTo: number) => Promise<ProofRecord[]>;

const PAGE = 1000;
/** Most records one fusion may read: past it the step fails rather than hold the worker for minutes. */
export const MAX_FUSION_RECORDS = 100_000;

export function createTelemetryActivities(deps: TelemetryDeps) {
  const perHour = deps.readingsPerHour ?? MAX_READINGS_PER_DEVICE_HOUR;

  const deployment = new Set([deps.signer.publicKey, ...(deps.fusionWriters ?? [])]);
  /**
   * The deployment's record of a reading id: under the id when this node or a peer node key wrote it (a client
   * that retried on the other gateway must not store a reading twice), else this node's under its writer-scoped
   * id (another key took the id).
   */
  async function ownRecord(id: string): Promise<ProofRecord | null> {
    const plain = await deps.store.getRecord(id);
    if (plain !== null && deployment.has(plain.address.pk)) return plain;
    const scoped = await deps.store.getRecord(writerScopedId(deps.signer, id));
    return scoped !== null && scoped.address.pk === deps.signer.publicKey ? scoped : null;
  }

  /** A reading against this node's stored record of its id: a duplicate, or a conflict when the value differs. */
  function againstStored(sent: CheckedReading, record: ProofRecord): AcceptedReading | ReadingRefusal {
    const payload = telemetryPayloadOf(record.payload);
    // The device already reported this instant with another value: the stored reading stands.
    if (payload === null || payload.value !== sent.value || payload.unit !== sent.unit) {
      return {
        index: sent.index,
        code: 'record_conflict',
        detail: `${sent.quantity} at ${sent.observed_at} is already stored with the value ${payload?.value} (${record.id})`,
      };
    }
    return { index: sent.index, record_id: record.id, epoch: record.address.epoch, duplicate: true };
  }

  return {
    async ingest(batch: TelemetryBatch): Promise<IngestResult> {
      const now = deps.clock();
      const current = epochAt(now, deps.genesisMs, deps.epochMs);
      const sealed = await deps.store.latestSeal(deps.signer.publicKey);
      const oldestEpoch = Math.max(current - 1, sealed === null ? 0 : sealed.epoch + 1);
      const clock = { nowMs: now, genesisMs: deps.genesisMs, epochMs: deps.epochMs, oldestEpoch };
      const refused: ReadingRefusal[] = [];
      const checked: CheckedReading[] = [];
      const device = { device_pk: batch.devicePk, h3_cell: batch.cell };
      for (const [index, reading] of batch.readings.entries()) {
        const outcome = checkReading(reading, index, clock, device);
        if (isRefusal(outcome)) refused.push(outcome);
        else checked.push(outcome);
      }
      // A reading this node already stored (an earlier send, a replay, or twice in this batch) is answered
      // from the store and costs nothing: a batch rebuilt from public data and replayed must not spend the
      // device's budget (docs/security.md). Only new readings are counted, one by one, so a partly
      // over-budget batch keeps its first readings.
      const accepted: AcceptedReading[] = [];
      const window = rateWindow(now, deps.genesisMs);
      const within: CheckedReading[] = [];
      const counted = new Set<string>();
      for (const reading of checked) {
        const id = telemetryRecordId(batch.devicePk, reading.quantity, reading.observed_at);
        const stored = await ownRecord(id);
        if (stored !== null) {
          const outcome = againstStored(reading, stored);
          if ('code' in outcome) refused.push(outcome);
          else accepted.push(outcome);
          continue;
        }
        if (counted.has(id)) {
          within.push(reading);
          continue;
        }
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
        } else {
          counted.add(id);
          within.push(reading);
        }
      }
      const writtenAt = new Date(now).toISOString();
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
            device_signature: r.signature,
            principal_pk: batch.principalPk,
          } satisfies TelemetryPayload,
          written_at: writtenAt,
          // A peer that stored the reading since ownRecord looked (the client's first send still in flight there).
          sharedWith: [...deployment].filter((pk) => pk !== deps.signer.publicKey),
        }));
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
        const fresh = new Set<string>();
        records.forEach((record, i) => {
          // The same reading twice in one batch: the first is new, the second the duplicate (or a conflict).
          const outcome = againstStored(group[i]!, record);
          if ('code' in outcome) refused.push(outcome);
          else
            accepted.push({
              ...outcome,
              duplicate: fresh.has(record.id) || record.address.pk !== deps.signer.publicKey,
            });
          fresh.add(record.id);
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

    /** The fusion step's source on the gateway: this node's telemetry records of the cell and epochs, verified. */
    source: storeTelemetrySource(deps.store, deps.fusionWriters ?? [deps.signer.publicKey]),
  };
}

export type TelemetryActivities = ReturnType<typeof createTelemetryActivities>;

/**
 * Telemetry records straight from a proof store, written by one of `writers` (the fusion's trusted writers:
 * another writer's are never inputs, and do not count towards MAX_FUSION_RECORDS), each re-checked (hash and
 * writer signature).
 */
export function storeTelemetrySource(store: ProofStore, writers: readonly string[]): TelemetrySource {
  const trusted = new Set(writers);
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
      for (const record of page.records) {
        if (trusted.has(record.address.pk) && checkRecord(record).ok) out.push(record);
      }
      if (out.length > MAX_FUSION_RECORDS) {
        throw new ServiceError('invalid_request', `more than ${MAX_FUSION_RECORDS} readings in the window: narrow it`);
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
    return out;
  };
}
