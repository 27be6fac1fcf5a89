// The gateway alone in its own process, so the load generator does not share its event loop. With
// BENCH_GATE_PROCESSES=N it is N node:cluster workers on one port (as WEB_CONCURRENCY=N runs `geofabric start`).
// With BENCH_GATE_BARE=1 it is the floor instead: a bare Koa server that reads each body, parses it, canonicalises
// it and verifies its Ed25519 signature (core/gates/signature.ts, node:crypto on the main thread), then refuses it,
// with none of the gateway's gates, limits, logs or metrics.
import cluster from 'node:cluster';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { checkRequestSignature } from '../core/gates/signature.js';
import { startGateway } from '../test/helpers/gateway.js';

const processes = Number(process.env.BENCH_GATE_PROCESSES ?? 1);

async function startBare(): Promise<{ url: string; close(): Promise<void> }> {
  const app = new Koa();
  app.use(async (ctx) => {
    const chunks: Buffer[] = [];
    for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      ctx.status = 400;
      ctx.body = { error: 'invalid_json' };
      return;
    }
    const checked = checkRequestSignature(body, ctx.get('x-idn-signature') || undefined, Date.now());
    ctx.status = 400;
    ctx.body = checked.ok
      ? { error: 'invalid_request', detail: 'refused after the signature' }
      : { error: checked.error };
  });
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

if (processes > 1 && cluster.isPrimary) {
  for (let i = 0; i < processes; i++) cluster.fork();
  let listening = 0;
  cluster.on('message', (_worker, message: { port: string }) => {
    // Every worker listens on the same port; print it once all do.
    if (++listening === processes) process.stdout.write(`${message.port}\n`);
  });
  process.on('SIGTERM', () => {
    let left = processes;
    for (const worker of Object.values(cluster.workers ?? {})) {
      worker?.once('exit', () => --left === 0 && process.exit(0));
      worker?.process.kill('SIGTERM');
    }
  });
} else {
  const gateway = process.env.BENCH_GATE_BARE === '1' ? await startBare() : await startGateway();
  const port = new URL(gateway.url).port;
  if (cluster.isWorker) process.send!({ port });
  else process.stdout.write(`${port}\n`);
  // Exit normally on SIGTERM so --cpu-prof can write its profile.
  process.on('SIGTERM', () => {
    void gateway.close().then(() => process.exit(0));
  });
}
