// The engine's floor for bench/temporal.ts: a workflow with one no-op activity and nothing of Geofabric's. The
// activity runs on `taskQueue`, which another process polls (bench/temporal-floor-activity.ts), as a cell
// worker's step does.
import { proxyActivities } from '@temporalio/workflow';

export async function oneActivity(taskQueue: string): Promise<string> {
  const { noop } = proxyActivities<{ noop(): Promise<string> }>({ startToCloseTimeout: '10 s', taskQueue });
  return noop();
}

/** The floor of a 4-step chain on one cell worker: four no-op activities, one after the other. */
export async function fourActivities(taskQueue: string): Promise<string> {
  const { noop } = proxyActivities<{ noop(): Promise<string> }>({ startToCloseTimeout: '10 s', taskQueue });
  let last = '';
  for (let i = 0; i < 4; i++) last = await noop();
  return last;
}
