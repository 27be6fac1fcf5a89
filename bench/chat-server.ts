// The chat bench's server process: an instant fake OpenAI-compatible runtime (the local worker's runtime), the
// gateway in front of it as `npm start` runs it (SQLite WAL file store, proof records on, the local worker
// registered and tinyllama pre-warmed), and the floor: a bare Koa proxy that forwards the body to the runtime over
// a keep-alive connection and answers its parsed JSON (no gates, dispatch or records). Prints the gateway's port,
// the runtime's base URL and the bare proxy's port.
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Koa from 'koa';
import { openSqlite } from '../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../store/sqlite/proof-store.js';
import { startFakeRuntime } from '../test/helpers/fake-openai-runtime.js';
import { startGateway } from '../test/helpers/gateway.js';

const runtime = await startFakeRuntime('bench', () => ({
  content: 'Villa Borghese is a park.',
  usage: { prompt_tokens: 12, completion_tokens: 6 },
}));
const dataDir = mkdtempSync(join(tmpdir(), 'geofabric-bench-chat-'));
const db = openSqlite(join(dataDir, 'proofs.db'));
const gateway = await startGateway({
  proofs: createSqliteProofStore(db),
  config: { apiKeys: ['sk-bench'] },
  swarm: { workerRuntimeUrl: runtime.url, workerModels: ['tinyllama'], prewarmModels: ['tinyllama'] },
});
await gateway.swarm.prewarmed();

const upstream = new Agent({ keepAlive: true });
const bare = new Koa();
bare.use(async (ctx) => {
  const body = await readAll(ctx.req);
  const answer = await new Promise<Buffer>((resolve, reject) => {
    const req = request(
      `${runtime.url}/chat/completions`,
      {
        method: 'POST',
        agent: upstream,
        headers: { 'content-type': 'application/json', authorization: 'Bearer none' },
      },
      (res) => void readAll(res).then(resolve, reject),
    );
    req.on('error', reject);
    req.end(body);
  });
  ctx.body = JSON.parse(answer.toString('utf8')) as unknown;
});
const bareServer = bare.listen(0, '127.0.0.1');
await once(bareServer, 'listening');

async function readAll(stream: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}

runtime.requests.length = 0; // the log would grow for the whole run

// The bench asks for this process's CPU time (µs, user + system) over the IPC channel, around its runs.
process.on('message', () => {
  const { user, system } = process.cpuUsage();
  process.send?.(user + system);
});
process.stdout.write(`${new URL(gateway.url).port} ${runtime.url} ${(bareServer.address() as AddressInfo).port}\n`);
process.on('SIGTERM', () => {
  bareServer.close();
  upstream.destroy();
  void gateway.close().then(async () => {
    const records = (await createSqliteProofStore(db).queryRecords({ collection: 'inference', limit: 1 })).records;
    process.stderr.write(records.length === 0 ? 'no inference records were written\n' : '');
    await runtime.close();
    db.close();
    rmSync(dataDir, { recursive: true, force: true });
    process.exit(0);
  });
});
