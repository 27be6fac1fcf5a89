/**
 * `npm run bench:temporal`: compound jobs on Temporal beside the embedded runner and beside the engine's own
 * floor, all in one run on one dev server. Starts a private engine pair with scripts/engines.sh (as
 * scripts/test-live.sh does) unless TEMPORAL_ADDRESS names a running server. The gateway and its Temporal
 * Workers run in this process against an instant OpenAI-compatible runtime (the backbone), so the figures are
 * orchestration: Temporal's round trips and Geofabric's own activities, never inference.
 *
 * BENCH_TEMPORAL_JOBS: sequential jobs per latency figure (default 40); BENCH_TEMPORAL_CONCURRENT_JOBS: jobs for the
 * throughput figure at 16 concurrent clients (default 200).
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time.js';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { workflowIdOf } from '../api/temporal-job-runner.js';
import { generateKeyPair } from '../core/identity.js';
import { startFakeRuntime } from '../test/helpers/fake-openai-runtime.js';
import { startGateway, type TestGateway } from '../test/helpers/gateway.js';
import { signJob } from '../test/helpers/jobs.js';
import { startTemporalGateway } from '../test/live/live-env.js';

const SEQUENTIAL = Number(process.env.BENCH_TEMPORAL_JOBS ?? 40);
const CONCURRENT_JOBS = Number(process.env.BENCH_TEMPORAL_CONCURRENT_JOBS ?? 200);
const CONCURRENCY = 16;
const ROOT = fileURLToPath(new URL('..', import.meta.url));

const fmt = (ms: number) => `${ms.toFixed(1)} ms`;

function percentiles(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { p50: at(0.5), p99: at(0.99) };
}

/** Sequential latencies of `run` (after a few warm-up runs), then runs/s at CONCURRENCY clients. */
async function measure(run: () => Promise<void>, count: number): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < 3; i++) await run();
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    await run();
    samples.push(performance.now() - t);
  }
  return percentiles(samples);
}

async function throughput(run: () => Promise<void>, total: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < total) await run();
    }),
  );
  return total / ((performance.now() - started) / 1000);
}

/** Engines of our own (scripts/engines.sh), or the server TEMPORAL_ADDRESS names. */
function startEngines(): { address: string; stop(): void } {
  if (process.env.TEMPORAL_ADDRESS) return { address: process.env.TEMPORAL_ADDRESS, stop() {} };
  const dir = mkdtempSync(join(tmpdir(), 'geofabric-bench-temporal-'));
  const env = { ...process.env, GEOFABRIC_ENGINES_STATE: join(dir, 'engines.env') };
  const engines = (command: string) =>
    execFileSync('bash', ['scripts/engines.sh', command], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
  engines('install');
  const lines = engines('start').toString();
  const address = /^TEMPORAL_ADDRESS=(.+)$/m.exec(lines)?.[1];
  const stop = () => {
    engines('stop');
    rmSync(dir, { recursive: true, force: true });
  };
  if (!address) {
    stop();
    throw new Error(`scripts/engines.sh start printed no TEMPORAL_ADDRESS:\n${lines}`);
  }
  return { address, stop };
}

const singleStep = () => ({
  h3_cell: '861e8050fffffff',
  nonce: randomUUID(),
  steps: [{ id: 'ask', type: 'inference', messages: [{ role: 'user', content: 'hi' }] }],
  budget_credits: 1,
});
const fourSteps = () => ({
  h3_cell: '861e8050fffffff',
  nonce: randomUUID(),
  steps: ['a', 'b', 'c', 'd'].map((id, i) => ({
    id,
    type: 'inference',
    messages: [{ role: 'user', content: `step ${id}` }],
    ...(i > 0 ? { depends_on: ['a', 'b', 'c'][i - 1] } : {}),
  })),
  budget_credits: 1,
});

/** The last job a submitter sent: its id and its time from POST to answer. */
const last = { jobId: '', ms: 0 };

/** One POST /v1/compute of a fresh job; anything but a completed job stops the bench. */
function submitter(gw: TestGateway, job: () => Record<string, unknown>) {
  const alice = generateKeyPair();
  return async () => {
    const { body, headers } = signJob(alice, job());
    const t = performance.now();
    const res = await gw.post('/v1/compute', body, headers);
    if (res.status !== 200 || (res.body as { status?: string }).status !== 'complete') {
      throw new Error(`job did not complete: ${res.status} ${res.text}`);
    }
    Object.assign(last, { jobId: (res.body as { job_id: string }).job_id, ms: performance.now() - t });
  };
}

async function benchRunner(gw: TestGateway, afterSingle?: () => Promise<void>) {
  const single = await measure(submitter(gw, singleStep), SEQUENTIAL);
  await afterSingle?.();
  const four = await measure(submitter(gw, fourSteps), SEQUENTIAL);
  const perSecond = await throughput(submitter(gw, singleStep), CONCURRENT_JOBS);
  return { single, four, perSecond };
}

/** Where one job's time went: its history's events, in ms from the first. */
async function timeline(client: Client, workflowId: string, what: string, totalMs: number): Promise<string> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const events = history.events ?? [];
  const t0 = tsToMs(events[0]?.eventTime);
  const rows = events.map((e) => {
    // The event's type, from the one attributes field it carries (activityTaskScheduledEventAttributes, …).
    const attributes = Object.keys(e).find((k) => k.endsWith('EventAttributes') && e[k as keyof typeof e]);
    const name = attributes?.replace(/EventAttributes$/, '') ?? '?';
    return `+${String(tsToMs(e.eventTime) - t0).padStart(4)} ms ${name}`;
  });
  return `${what}, ${totalMs.toFixed(0)} ms at the client; its history:\n    ${rows.join('\n    ')}`;
}

async function benchFloor(address: string, namespace: string) {
  const taskQueue = `bench-floor-${randomUUID().slice(0, 8)}`;
  const connection = await NativeConnection.connect({ address });
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue,
    workflowBundle: await bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('./temporal-floor-workflow.ts', import.meta.url)),
      logger: new DefaultLogger('WARN'),
    }),
    activities: { noop: async () => 'ok' },
  });
  const running = worker.run();
  const client = new Client({ connection: await Connection.connect({ address }), namespace });
  const lastRun = { workflowId: '', ms: 0 };
  const run = async () => {
    const t = performance.now();
    const workflowId = `floor-${randomUUID()}`;
    await client.workflow.execute('oneActivity', { taskQueue, workflowId });
    Object.assign(lastRun, { workflowId, ms: performance.now() - t });
  };
  try {
    const latency = await measure(run, SEQUENTIAL);
    const story = await timeline(client, lastRun.workflowId, 'one bare one-activity workflow', lastRun.ms);
    const perSecond = await throughput(run, CONCURRENT_JOBS);
    return { ...latency, perSecond, story };
  } finally {
    worker.shutdown();
    await running;
    await client.connection.close();
    await connection.close();
  }
}

async function main() {
  Runtime.install({
    logger: new DefaultLogger('WARN'),
    telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, forward: {} } },
  });
  const load = loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');
  console.log(`machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}, load ${load}`);
  const engines = startEngines();
  const namespace = process.env.TEMPORAL_NAMESPACE || 'default';
  const backbone = await startFakeRuntime('backbone', () => ({ content: 'ok' }));
  try {
    const floor = await benchFloor(engines.address, namespace);

    const embedded = await startGateway({ swarm: { backboneUrl: backbone.url }, jobWaitMs: 30_000 });
    const onEmbedded = await benchRunner(embedded).finally(() => embedded.close());

    const onTemporal = async (eager: boolean) => {
      const { gw, client, close } = await startTemporalGateway({
        address: engines.address,
        namespace,
        naming: { prefix: `bench-${randomUUID().slice(0, 8)}`, routingResolution: 5 },
        gateway: { swarm: { backboneUrl: backbone.url }, jobWaitMs: 30_000 },
        runner: { waitMs: 30_000, runTimeoutMs: 60_000 },
        eager,
      });
      let story = '';
      const what = `one single-step job on temporal${eager ? '' : ' (update-with-start)'}`;
      const figures = await benchRunner(gw, async () => {
        story = await timeline(client, workflowIdOf(last.jobId), what, last.ms);
      }).finally(close);
      return { ...figures, story };
    };
    const eager = await onTemporal(true);
    const withUpdate = await onTemporal(false);

    const row = (name: string, r: { single: { p50: number; p99: number }; four: { p50: number; p99: number } }) =>
      `${name.padEnd(28)} single-step p50 ${fmt(r.single.p50)}, p99 ${fmt(r.single.p99)}; ` +
      `4-step chain p50 ${fmt(r.four.p50)}, p99 ${fmt(r.four.p99)}`;
    console.log(`sequential jobs (${SEQUENTIAL} each), POST /v1/compute to the finished job:`);
    console.log(`  ${row('embedded', onEmbedded)}`);
    console.log(`  ${row('temporal', eager)}`);
    console.log(`  ${row('temporal, update-with-start', withUpdate)}`);
    console.log(
      `  engine floor: one-activity workflow, client.workflow.execute p50 ${fmt(floor.p50)}, p99 ${fmt(floor.p99)}`,
    );
    console.log(`  ${eager.story}`);
    console.log(`  ${withUpdate.story}`);
    console.log(`  ${floor.story}`);
    console.log(`throughput, ${CONCURRENT_JOBS} single-step jobs at ${CONCURRENCY} concurrent:`);
    console.log(`  embedded ${onEmbedded.perSecond.toFixed(1)} jobs/s`);
    console.log(`  temporal ${eager.perSecond.toFixed(1)} jobs/s`);
    console.log(`  temporal, update-with-start ${withUpdate.perSecond.toFixed(1)} jobs/s`);
    console.log(`  engine floor ${floor.perSecond.toFixed(1)} one-activity workflows/s`);
    console.log(
      `goals: temporal/embedded single-step p50 ${(eager.single.p50 / onEmbedded.single.p50).toFixed(2)}× (goal ≤ 3×); ` +
        `temporal jobs/s / floor workflows/s ${(eager.perSecond / floor.perSecond).toFixed(2)} (goal ≥ 0.8)`,
    );
  } finally {
    await backbone.close();
    engines.stop();
  }
}

await main();
process.exit(0);
