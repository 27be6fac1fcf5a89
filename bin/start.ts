import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { createApp } from '../api/app.js';
import type { Config } from './config.js';
import { openStores } from './stores.js';

/** Runs the gateway until SIGINT/SIGTERM, then drains connections and closes the stores. */
export async function startGateway(config: Config): Promise<void> {
  const logger = pino({ level: config.logLevel });
  const stores = await openStores(config);
  const app = createApp({
    config: {
      requireDelegation: config.requireDelegation,
      bodyLimitBytes: config.bodyLimitBytes,
      epochGenesisMs: config.epochGenesisMs,
      apiKeys: config.apiKeys,
    },
    clock: Date.now,
    logger,
    rateLimits: stores.rateLimits,
  });
  const server = app.listen(config.port, config.host);
  server.requestTimeout = 30_000;
  server.headersTimeout = 20_000;
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  logger.info({ url: `http://${config.host}:${port}` }, 'geofabric gateway listening');

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    server.close(() => {
      stores.close().then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error({ err: error }, 'closing stores failed');
          process.exit(1);
        },
      );
    });
    server.closeIdleConnections();
    setTimeout(() => process.exit(1), 10_000).unref();
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}
