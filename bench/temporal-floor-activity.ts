// The other process of the engine's floor (bench/temporal.ts): a Temporal Worker with one no-op activity and no
// workflows, polling the queue named in argv; prints "polling" once it runs and stops on SIGTERM.
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';

const [address, namespace, taskQueue] = process.argv.slice(2) as [string, string, string];
Runtime.install({
  logger: new DefaultLogger('WARN'),
  telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, forward: {} } },
});
const connection = await NativeConnection.connect({ address });
const worker = await Worker.create({ connection, namespace, taskQueue, activities: { noop: async () => 'ok' } });
process.once('SIGTERM', () => worker.shutdown());
const running = worker.run();
process.stdout.write('polling\n');
await running;
await connection.close();
process.exit(0);
