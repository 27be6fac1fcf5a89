import type { Logger } from 'pino';
import { createProcessLogger } from './log-output.js';
import type { Config } from './config.js';
import { openStores, type Stores } from './stores.js';

/**
 * Runs one server alone (`geofabric perception`, `geofabric governance`) on the configured stores until
 * SIGINT/SIGTERM, then closes it and the stores; a close that hangs ends the process after 10 s.
 */
export async function runAloneUntilSignal(
  config: Config,
  start: (stores: Stores, logger: Logger) => Promise<{ close(): Promise<void> }>,
): Promise<void> {
  const logger = createProcessLogger(config);
  const stores = await openStores(config);
  let server: { close(): Promise<void> };
  try {
    server = await start(stores, logger);
  } catch (error) {
    await stores.close();
    throw error;
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    setTimeout(() => process.exit(1), 10_000).unref();
    server
      .close()
      .then(() => stores.close())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error({ err: error }, 'closing failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}
