/**
 * Proof-store epochs (docs/protocol.md §1.8, docs/protocol.md §8): one-hour windows numbered from a genesis instant, by default
 * 2026-01-01T00:00:00Z = epoch 0 (docs/protocol.md §10). Time is always passed in; this module never reads a clock.
 */
export const EPOCH_MS = 3_600_000;
export const DEFAULT_EPOCH_GENESIS_MS: number = Date.UTC(2026, 0, 1);
/**
 * Shortest epoch a development node may use (EPOCH_SECONDS, bin/config.ts): short epochs let a local demo see
 * its record sealed within a minute or two. The protocol's epoch is the hour (EPOCH_MS).
 */
export const MIN_DEV_EPOCH_MS = 10_000;

/**
 * The epoch containing `timeMs`. Times before genesis have no epoch: a negative epoch is never issued.
 * `epochMs` is the hour except on a development node (EPOCH_SECONDS).
 */
export function epochAt(
  timeMs: number,
  genesisMs: number = DEFAULT_EPOCH_GENESIS_MS,
  epochMs: number = EPOCH_MS,
): number {
  checkGenesis(genesisMs);
  checkLength(epochMs);
  if (!Number.isFinite(timeMs)) throw new RangeError(`time must be a finite number of ms: ${timeMs}`);
  if (timeMs < genesisMs) {
    throw new RangeError(`time ${timeMs} is before the epoch genesis ${new Date(genesisMs).toISOString()}`);
  }
  return Math.floor((timeMs - genesisMs) / epochMs);
}

/** The window of `epoch` as [start, end) in ms since the Unix epoch. */
export function epochWindow(
  epoch: number,
  genesisMs: number = DEFAULT_EPOCH_GENESIS_MS,
  epochMs: number = EPOCH_MS,
): { start: number; end: number } {
  checkGenesis(genesisMs);
  checkLength(epochMs);
  if (!Number.isSafeInteger(epoch) || epoch < 0) throw new RangeError(`epoch must be an integer ≥ 0: ${epoch}`);
  const start = genesisMs + epoch * epochMs;
  const end = start + epochMs;
  if (!Number.isSafeInteger(end)) throw new RangeError(`epoch ${epoch} is out of range`);
  return { start, end };
}

// Date.parse accepts many loose forms and local times; a genesis must be unambiguous, so parse by hand.
const ISO_UTC = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:Z|\+00:00)$/;

/**
 * Parses an `EPOCH_GENESIS` setting: an ISO 8601 UTC timestamp (`Z` or `+00:00`) that falls exactly
 * on an hour boundary, e.g. `2026-01-01T00:00:00Z`. Anything else is a RangeError, so a typo cannot
 * silently renumber every epoch.
 */
export function parseEpochGenesis(iso: string): number {
  const bad = (why: string) =>
    new RangeError(
      `epoch genesis must be an ISO 8601 UTC timestamp on an hour boundary (${why}): ${JSON.stringify(iso)}`,
    );
  const match = typeof iso === 'string' ? ISO_UTC.exec(iso) : null;
  if (!match) throw bad('e.g. 2026-01-01T00:00:00Z');
  const [, year, month, day, hour, minute, second = '0', fraction = '0'] = match as unknown as string[];
  const [y, mo, d, h] = [year, month, day, hour].map(Number) as [number, number, number, number];
  if (Number(minute) !== 0 || Number(second) !== 0 || /[1-9]/.test(fraction)) throw bad('not on the hour');
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d); // not Date.UTC: it maps years 0..99 to 1900..1999
  date.setUTCHours(h, 0, 0, 0);
  // Date rolls invalid fields over (Feb 30 → Mar 2, hour 24 → next day); a round trip catches that.
  if (
    date.getUTCFullYear() !== y ||
    date.getUTCMonth() !== mo - 1 ||
    date.getUTCDate() !== d ||
    date.getUTCHours() !== h
  ) {
    throw bad('no such date or hour');
  }
  return date.getTime();
}

function checkLength(epochMs: number): void {
  if (!Number.isSafeInteger(epochMs) || epochMs < MIN_DEV_EPOCH_MS || epochMs > EPOCH_MS) {
    throw new RangeError(`epoch length must be an integer ms value in [${MIN_DEV_EPOCH_MS}, ${EPOCH_MS}]: ${epochMs}`);
  }
}

function checkGenesis(genesisMs: number): void {
  if (!Number.isSafeInteger(genesisMs)) throw new RangeError(`epoch genesis must be an integer ms value: ${genesisMs}`);
}
