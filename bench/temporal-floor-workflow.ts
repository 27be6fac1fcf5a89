// The engine's floor for bench/temporal.ts: a workflow with one no-op activity and nothing of Geofabric's.
import { proxyActivities } from '@temporalio/workflow';

const { noop } = proxyActivities<{ noop(): Promise<string> }>({ startToCloseTimeout: '10 s' });

export async function oneActivity(): Promise<string> {
  return noop();
}
