/**
 * Compound jobs: the scheduler's own cost per job, and embedded jobs per second end to end.
 * Step activities are instant, so the figures are Geofabric's overhead: gates, planning, the job store,
 * the scheduler, the signed `compute/job` proof record.
 */
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import type { StepActivities } from '../activities/compute/step-activities.js';
import { createEmbeddedJobRunner } from '../api/job-runner.js';
import { generateKeyPair } from '../core/identity.js';
import { planJob } from '../core/job-plan.js';
import { runSchedule, type ScheduledStep, type StepRun } from '../core/job-scheduler.js';
import { describeStepError } from '../core/step-error.js';
import { startGateway } from '../test/helpers/gateway.js';
import { signJob } from '../test/helpers/jobs.js';

const instant = (worker: string): StepRun => ({
  output: { text: 'ok', locations: [] },
  cost: 0.00001,
  worker_pk: worker,
  record_id: null,
  latency_ms: 0,
});

/** The satellite → AI → map chain (3 levels) plus one parallel step: what the scheduler does per job. */
const CHAIN: ScheduledStep[] = [
  { id: 'ndvi', type: 'image_process', estimate: 0.001 },
  { id: 'explain', type: 'inference', depends_on: 'ndvi', estimate: 0.006 },
  { id: 'side', type: 'inference', depends_on: 'ndvi', estimate: 0.006 },
  { id: 'map', type: 'tile_render', depends_on: 'explain', estimate: 0.0001 },
];

export async function benchScheduler(jobs = 20_000) {
  const plan = planJob(CHAIN);
  if (!plan.ok) throw new Error(plan.detail);
  const samples: number[] = [];
  const run = async () => instant('w');
  for (let i = 0; i < jobs; i++) {
    const t = performance.now();
    await runSchedule(
      { steps: CHAIN, plan: plan.value, budgetCredits: 0.1, reservedCredits: 0.0001 },
      run,
      describeStepError,
    );
    samples.push(performance.now() - t);
  }
  return percentiles(samples.slice(jobs / 10)); // the first tenth warms the JIT
}

export async function benchEmbeddedJobs(jobs = 2_000, concurrency = 16) {
  const node = 'ab'.repeat(32);
  const steps: StepActivities = {
    inferenceStep: async () => instant(node),
    tileRenderStep: async () => instant(node),
    imageProcessStep: async () => instant(node),
    sensorFusionStep: async () => instant(node),
  };
  const gw = await startGateway({
    jobRunner: (compute, store) => createEmbeddedJobRunner({ steps, jobs: compute.jobs, store, waitMs: 30_000 }),
  });
  const alice = generateKeyPair();
  const bodies = Array.from({ length: jobs }, () =>
    signJob(alice, {
      h3_cell: '861e8050fffffff',
      nonce: randomUUID(),
      steps: [
        { id: 'ndvi', type: 'image_process', operation: 'ndvi' },
        { id: 'explain', type: 'inference', depends_on: 'ndvi', messages: [{ role: 'user', content: 'dry?' }] },
        { id: 'map', type: 'tile_render', depends_on: 'explain', zoom: 12 },
      ],
      budget_credits: 1,
    }),
  );
  const latencies: number[] = [];
  const statuses: Record<number, number> = {};
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < bodies.length) {
        const { body, headers } = bodies[next++]!;
        const t = performance.now();
        const res = await gw.post('/v1/compute', body, headers);
        latencies.push(performance.now() - t);
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await gw.close();
  return { jobs, perSecond: jobs / seconds, statuses, ...percentiles(latencies) };
}

function percentiles(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { p50Ms: at(0.5), p99Ms: at(0.99) };
}
