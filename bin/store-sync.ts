import { parseArgs } from 'node:util';
import { createSyncAgent, SyncError } from '../activities/proof/sync-agent.js';
import { EPOCH_MS } from '../core/epoch.js';
import { ConfigError, loadConfig } from './config.js';
import { checkStoreEpochLength } from './epoch-length.js';
import { loadNodeKey } from './node-key.js';
import { createProgress, type ProgressStream } from './progress.js';
import { openStores } from './stores.js';

export const STORE_SYNC_USAGE = 'store sync [--central <url>]';

export interface StoreCommandIo {
  /** Where the result goes (JSON, stdout by default). */
  out?: (value: unknown) => void;
  /** Where progress goes (stderr by default; never stdout, which carries the result). */
  progress?: ProgressStream;
  /** The environment the configuration is read from (process.env by default). */
  env?: NodeJS.ProcessEnv;
}

const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

/**
 * `geofabric store sync [--central <url>]`: one sync round now, as the node's background agent runs every
 * SYNC_INTERVAL_SECONDS: every unsynced record of the configured store, then every unsynced seal, pushed to the
 * central gateway (`--central`, else CENTRAL_STORE_URL) in batches signed by the node key. Safe beside a running
 * node: the central store is idempotent by record id and by (sealer, epoch). Prints what was pushed; exit 1 when
 * the central store refused items for good or could not be reached (what was acknowledged stays synced).
 */
export async function storeSyncCommand(argv: string[], io: StoreCommandIo = {}): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { central: { type: 'string' } } });
  const config = loadConfig(io.env);
  const centralUrl = values.central ?? config.centralStoreUrl;
  if (!centralUrl) throw new TypeError(`usage: ${STORE_SYNC_USAGE} (or set CENTRAL_STORE_URL)`);
  // A development store's short epochs mean nothing to a central store: never pushed (docs/quickstart.md).
  if (config.epochMs !== EPOCH_MS) {
    throw new ConfigError('configuration: EPOCH_SECONDS and DEMO stores are local: `store sync` refuses them');
  }
  if (!config.mongo) checkStoreEpochLength(config.dataDir, config.epochMs);
  const out = io.out ?? print;
  const stores = await openStores(config);
  const refusals: { id: unknown; error: unknown; detail: unknown }[] = [];
  const progress = {
    records: createProgress({
      label: 'store sync',
      unit: 'records',
      ...(io.progress ? { stream: io.progress } : {}),
    }),
    seals: createProgress({ label: 'store sync', unit: 'seals', ...(io.progress ? { stream: io.progress } : {}) }),
  };
  try {
    const agent = createSyncAgent({
      store: stores.proofs,
      centralUrl,
      signer: loadNodeKey(config.dataDir, config.nodeSecretKey).key,
      // Refusals are reported in the result, not as log lines across the progress bar.
      logger: {
        warn: () => undefined,
        error: (obj) => refusals.push(obj as (typeof refusals)[number]),
      },
    });
    const pushed = { records: 0, seals: 0 };
    try {
      await agent.syncOnce({
        onPushed: (kind, n) => {
          // Records are all pushed before the first seal: the records' line is final then.
          if (kind === 'seals' && pushed.seals === 0) progress.records.done();
          pushed[kind] += n;
          progress[kind].tick(n);
        },
      });
    } catch (error) {
      if (!(error instanceof SyncError)) throw error;
      progress.records.stop();
      progress.seals.stop();
      out({ synced: false, central: centralUrl, ...pushed, refused: refusals.length, refusals, error: error.message });
      return 1;
    }
    progress.records.done();
    progress.seals.done();
    out({ synced: refusals.length === 0, central: centralUrl, ...pushed, refused: refusals.length, refusals });
    return refusals.length === 0 ? 0 : 1;
  } finally {
    progress.records.stop();
    progress.seals.stop();
    await stores.close();
  }
}
