// The chat bench's server process: an instant fake OpenAI-compatible runtime (the local worker's runtime) and
// the gateway in front of it as `npm start` runs it (SQLite WAL file store, proof records on, the local worker
// registered and tinyllama pre-warmed). Prints the gateway's port and the runtime's base URL.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqlite } from '../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../store/sqlite/proof-store.js';
import { startFakeRuntime } from '../test/helpers/fake-openai-runtime.js';
import { startGateway } from '../test/helpers/gateway.js';

const runtime = await startFakeRuntime('bench', () => ({
  content: 'Villa Borghese is a park.',
  usage: { prompt_tokens: 12, completion_tokens: 6 },
}));
const db = openSqlite(join(mkdtempSync(join(tmpdir(), 'geofabric-bench-chat-')), 'proofs.db'));
const gateway = await startGateway({
  proofs: createSqliteProofStore(db),
  config: { apiKeys: ['sk-bench'] },
  swarm: { workerRuntimeUrl: runtime.url, workerModels: ['tinyllama'], prewarmModels: ['tinyllama'] },
});
await gateway.swarm.prewarmed();
runtime.requests.length = 0; // the log would grow for the whole run

// The bench asks for this process's CPU time (µs, user + system) over the IPC channel, around its runs.
process.on('message', () => {
  const { user, system } = process.cpuUsage();
  process.send?.(user + system);
});
process.stdout.write(`${new URL(gateway.url).port} ${runtime.url}\n`);
process.on('SIGTERM', () => {
  void gateway.close().then(async () => {
    const records = (await createSqliteProofStore(db).queryRecords({ collection: 'inference', limit: 1 })).records;
    process.stderr.write(records.length === 0 ? 'no inference records were written\n' : '');
    await runtime.close();
    process.exit(0);
  });
});
