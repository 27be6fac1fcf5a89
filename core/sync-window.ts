/**
 * Which epochs the central proof store takes records and seals for (docs/security.md §7).
 * Pure: the time is passed in.
 *
 * Records: the open epoch and the one before it. A record written in the last seconds of an hour reaches the
 * central store one sync interval (30 s, docs/protocol.md §8) plus retries later, i.e. in the next epoch; one
 * epoch of lag covers any delay under an hour. The next epoch is taken in its last SYNC_CLOCK_SKEW_MS before
 * it opens, for a writer whose clock runs a little ahead. Older epochs (a worker back after being offline)
 * are taken only with the writer's own seal of that epoch in the same push, and no older than a maximum age.
 */
import { fail, pass, type Check } from './check.js';
import { EPOCH_MS, epochAt, epochWindow } from './epoch.js';
import type { ProofRecord, Seal } from './proof-types.js';

/** Epochs before the open one that a push may still carry records of without their seal. */
export const SYNC_LAG_EPOCHS = 1;
/** How far ahead a writer's clock may run: records of the next epoch are taken this long before it opens. */
export const SYNC_CLOCK_SKEW_MS = 5 * 60_000;
/** SYNC_MAX_BACKFILL_HOURS default: a worker offline for up to a week can still bring its sealed epochs. */
export const DEFAULT_MAX_BACKFILL_EPOCHS = 7 * 24;

export interface SyncWindow {
  nowMs: number;
  genesisMs: number;
  /** Oldest epoch (counted back from the open one) taken at all, with its seal. */
  maxBackfillEpochs: number;
  /** Epoch length: the hour unless a development node shortened it (docs/quickstart.md). */
  epochMs?: number | undefined;
}

/** The open epoch at `nowMs`; -1 before genesis (nothing is open yet). */
function openEpoch(nowMs: number, genesisMs: number, epochMs: number): number {
  return nowMs < genesisMs ? -1 : epochAt(nowMs, genesisMs, epochMs);
}

/**
 * Whether a record of `record.address.epoch` may be stored now: pass when its epoch is in the window, or older
 * but brought with `seal` (the writer's valid seal of that epoch, already checked by the caller) covering its seq.
 */
export function checkRecordEpoch(
  record: Pick<ProofRecord, 'address' | 'seq' | 'id'>,
  seal: Pick<Seal, 'sealer_pk' | 'epoch' | 'first_seq' | 'last_seq'> | undefined,
  window: SyncWindow,
): Check<true> {
  const { epoch, pk } = record.address;
  const epochMs = window.epochMs ?? EPOCH_MS;
  const open = openEpoch(window.nowMs, window.genesisMs, epochMs);
  if (epoch > open) {
    const start = epochWindow(epoch, window.genesisMs, epochMs).start;
    if (start - window.nowMs > SYNC_CLOCK_SKEW_MS) {
      return fail(
        'invalid_record',
        `record ${record.id}: epoch ${epoch} starts ${new Date(start).toISOString()}, in the future`,
      );
    }
    return pass(true);
  }
  if (epoch >= open - SYNC_LAG_EPOCHS) return pass(true);
  if (epoch < open - window.maxBackfillEpochs) {
    return fail(
      'invalid_record',
      `record ${record.id}: epoch ${epoch} is more than ${window.maxBackfillEpochs} epochs old (SYNC_MAX_BACKFILL_HOURS)`,
    );
  }
  const covers =
    seal !== undefined &&
    seal.sealer_pk === pk &&
    seal.epoch === epoch &&
    seal.first_seq !== null &&
    seal.last_seq !== null &&
    record.seq >= seal.first_seq &&
    record.seq <= seal.last_seq;
  return covers
    ? pass(true)
    : fail(
        'seal_required',
        `record ${record.id}: epoch ${epoch} is older than the sync window (epochs ${open - SYNC_LAG_EPOCHS}..${open}); ` +
          "push it with its writer's seal of that epoch",
      );
}

/** A seal may be made or stored only once its epoch's window has ended: 409 epoch_open naming the end. */
export function checkEpochEnded(
  epoch: number,
  nowMs: number,
  genesisMs: number,
  epochMs: number = EPOCH_MS,
): Check<true> {
  const { end } = epochWindow(epoch, genesisMs, epochMs);
  return nowMs >= end
    ? pass(true)
    : fail('epoch_open', `epoch ${epoch} is still open: it ends at ${new Date(end).toISOString()}`);
}
