// The gateway alone in its own process, so the load generator does not share its event loop. With
// BENCH_GATE_PROCESSES=N it is N node:cluster workers on one port (as WEB_CONCURRENCY=N runs `geofabric start`).
import cluster from 'node:cluster';
import { startGateway } from '../test/helpers/gateway.js';

const processes = Number(process.env.BENCH_GATE_PROCESSES ?? 1);

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
  const gateway = await startGateway();
  const port = new URL(gateway.url).port;
  if (cluster.isWorker) process.send!({ port });
  else process.stdout.write(`${port}\n`);
  // Exit normally on SIGTERM so --cpu-prof can write its profile.
  process.on('SIGTERM', () => {
    void gateway.close().then(() => process.exit(0));
  });
}
