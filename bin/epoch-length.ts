import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EPOCH_MS } from '../core/epoch.js';
import { ConfigError } from './config.js';

const MARKER = 'epoch-length.json';

/**
 * A SQLite store's epochs must keep one length for its whole life: a store of one-minute epochs read with
 * hourly ones would refuse every new record (its epochs would go back), and an hourly store read with
 * one-minute ones would seal hundreds of thousands of empty epochs. A store written with short epochs
 * (EPOCH_SECONDS) is marked `DATA_DIR/epoch-length.json`; a store without the marker is hourly. A start whose
 * epoch length differs from the store's is refused before anything is opened.
 */
export function checkStoreEpochLength(dataDir: string, epochMs: number): void {
  const marker = join(dataDir, MARKER);
  const storeExists = existsSync(join(dataDir, 'geofabric.db'));
  const stored = existsSync(marker) ? readMarker(marker) : storeExists ? EPOCH_MS : undefined;
  if (stored !== undefined && stored !== epochMs) {
    throw new ConfigError(
      `configuration: EPOCH_SECONDS: the store in ${dataDir} has ${stored / 1000}-second epochs, not ` +
        `${epochMs / 1000}; use another DATA_DIR (a store keeps one epoch length)`,
    );
  }
  if (stored === undefined && epochMs !== EPOCH_MS) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(marker, `${JSON.stringify({ epoch_seconds: epochMs / 1000 })}\n`);
  }
}

function readMarker(path: string): number {
  const seconds = (JSON.parse(readFileSync(path, 'utf8')) as { epoch_seconds?: unknown }).epoch_seconds;
  if (typeof seconds !== 'number' || !Number.isInteger(seconds) || seconds <= 0) {
    throw new ConfigError(`configuration: ${path}: epoch_seconds must be a positive integer`);
  }
  return seconds * 1000;
}
