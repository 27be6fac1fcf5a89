// The engine's floor for bench/temporal.ts: a workflow with one no-op activity and nothing of Geofabric's. The
// activity runs on `taskQueue`, which another process polls (bench/temporal-floor-activity.ts), as a cell
// worker's step does.
import { proxyActivities } from '@temporalio/workflow';

export async function oneActivity(taskQueue: string): Promise<string> {
  const { noop } = proxyActivities<{ noop(): Promise<string> }>({ startToCloseTimeout: '10 s', taskQueue });
  return noop();
}
