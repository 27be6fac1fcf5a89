// The gateway alone in its own process, so the load generator does not share its event loop.
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { createApp } from '../api/app.js';
import { DEFAULT_EPOCH_GENESIS_MS } from '../core/epoch.js';
import { openSqlite } from '../store/sqlite/open-database.js';
import { createSqliteRateLimitStore } from '../store/sqlite/rate-limit-store.js';

const app = createApp({
  config: {
    requireDelegation: false,
    bodyLimitBytes: 1024 * 1024,
    epochGenesisMs: DEFAULT_EPOCH_GENESIS_MS,
    apiKeys: [],
  },
  clock: Date.now,
  logger: pino({ level: 'silent' }),
  rateLimits: createSqliteRateLimitStore(openSqlite(':memory:')),
});
const server = app.listen(0, '127.0.0.1');
await once(server, 'listening');
process.stdout.write(`${(server.address() as AddressInfo).port}\n`);
// Exit normally on SIGTERM so --cpu-prof can write its profile.
process.on('SIGTERM', () => server.close(() => process.exit(0)));
