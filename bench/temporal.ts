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
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time.js';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { workflowIdOf } from '../api/temporal-job-runner.js';
import { generateKeyPair } from '../core/identity.js';
import { DEFAULT_WORKER_MODEL } from '../core/models.js';
import { startFakeRuntime } from '../test/helpers/fake-openai-runtime.js';
import { startGateway, type TestGateway } from '../test/helpers/gateway.js';
import { signJob } from '../test/helpers/jobs.js';
import { startTemporalGateway } from '../test/live/live-env.js';
import { startEnginePair } from './engine-pair.js';

const SEQUENTIAL = Number(process.env.BENCH_TEMPORAL_JOBS ?? 40);
const CONCURRENT_JOBS = Number(process.env.BENCH_TEMPORAL_CONCURRENT_JOBS ?? 200);
const CONCURRENCY = 16;
/** BENCH_TEMPORAL_ONLY=cell: only the floor, the embedded runs and the cell worker (no backbone runs on Temporal). */
const CELL_ONLY = process.env.BENCH_TEMPORAL_ONLY === 'cell';
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

/** Engines of our own (bench/engine-pair.ts), or the server TEMPORAL_ADDRESS names. */
function startEngines(): { address: string; stop(): void } {
  if (process.env.TEMPORAL_ADDRESS) return { address: process.env.TEMPORAL_ADDRESS, stop() {} };
  const pair = startEnginePair();
  return { address: pair.value('TEMPORAL_ADDRESS')!, stop: pair.stop };
}

const BENCH_CELL = '861e8050fffffff';
const singleStep = () => ({
  h3_cell: BENCH_CELL,
  nonce: randomUUID(),
  steps: [{ id: 'ask', type: 'inference', messages: [{ role: 'user', content: 'hi' }] }],
  budget_credits: 1,
});
const fourSteps = () => ({
  h3_cell: BENCH_CELL,
  nonce: randomUUID(),
  steps: ['a', 'b', 'c', 'd'].map((id, i) => ({
    id,
    type: 'inference',
    messages: [{ role: 'user', content: `step ${id}` }],
    ...(i > 0 ? { depends_on: ['a', 'b', 'c'][i - 1] } : {}),
  })),
  budget_credits: 1,
});

/** One run a bench sent: its workflow id, the wall clock at the request (ms) and its time to the answer. */
interface Sent {
  workflowId: string;
  atMs: number;
  ms: number;
}

/** The last job a submitter sent: its id and its time from POST to answer. */
const last = { jobId: '', ms: 0 };
/** Every sequential job's run and client time, while `recording` holds them (the profile reads their histories). */
let recording: Sent[] | undefined;

/** One POST /v1/compute of a fresh job; anything but a completed job (served by `by`, when given) stops the bench. */
function submitter(gw: TestGateway, job: () => Record<string, unknown>, by?: string) {
  const alice = generateKeyPair();
  return async () => {
    const { body, headers } = signJob(alice, job());
    const atMs = Date.now();
    const t = performance.now();
    const res = await gw.post('/v1/compute', body, headers);
    if (res.status !== 200 || (res.body as { status?: string }).status !== 'complete') {
      throw new Error(`job did not complete: ${res.status} ${res.text}`);
    }
    if (by !== undefined && (res.body as { worker_pk?: string }).worker_pk !== by) {
      throw new Error(`job served by ${(res.body as { worker_pk?: string }).worker_pk}, not ${by}`);
    }
    Object.assign(last, { jobId: (res.body as { job_id: string }).job_id, ms: performance.now() - t });
    recording?.push({ workflowId: workflowIdOf(last.jobId), atMs, ms: last.ms });
  };
}

async function benchRunner(
  gw: TestGateway,
  options: { afterSingle?: () => Promise<void>; afterFour?: () => Promise<void>; by?: string } = {},
) {
  const singleJobs: Sent[] = (recording = []);
  const single = await measure(submitter(gw, singleStep, options.by), SEQUENTIAL);
  await options.afterSingle?.();
  const fourJobs: Sent[] = (recording = []);
  const four = await measure(submitter(gw, fourSteps, options.by), SEQUENTIAL);
  recording = undefined;
  await options.afterFour?.();
  const perSecond = await throughput(submitter(gw, singleStep, options.by), CONCURRENT_JOBS);
  // The warm-up runs are not profiled.
  return { single, four, perSecond, singleJobs: singleJobs.slice(3), fourJobs: fourJobs.slice(3) };
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

/**
 * Where the runs' time went, from their histories: the median of each segment over `runs` (run to completion),
 * in ms. `before the run`: the request to the run's start event (the gateway's gates and routing, the start
 * call); `first workflow task`, `workflow task` (the ones between) and `last workflow task`: one task's run on its
 * Worker, started to completed (with an eager start the first includes handing the task from the start call to
 * the Worker; a local activity runs inside its task); `to the worker`: an activity's schedule-to-start; `on the
 * worker`: its start to completion; `back to the workflow`: a completed activity to the next workflow task's
 * start; `after the last task started`: from there to the answer at the client. The clocks are the machine's.
 */
async function profile(client: Client, runs: Sent[], what: string): Promise<string> {
  const segments = new Map<string, number[]>();
  const add = (name: string, ms: number) => segments.set(name, [...(segments.get(name) ?? []), ms]);
  for (const run of runs) {
    const history = await client.workflow.getHandle(run.workflowId).fetchHistory();
    const events = (history.events ?? []).map((e) => ({
      at: tsToMs(e.eventTime),
      type: Object.keys(e).find((k) => k.endsWith('EventAttributes') && e[k as keyof typeof e]) ?? '?',
    }));
    const at = (i: number) => events[i]!.at;
    const tasks: number[] = [];
    let lastTaskStart = at(0);
    for (let i = 0; i < events.length; i++) {
      const { type } = events[i]!;
      const previous = (name: string) => {
        for (let j = i - 1; j >= 0; j--) if (events[j]!.type === name) return at(j);
        return at(0);
      };
      if (type === 'workflowTaskStartedEventAttributes') lastTaskStart = at(i);
      if (type === 'workflowTaskCompletedEventAttributes')
        tasks.push(at(i) - previous('workflowTaskStartedEventAttributes'));
      if (type === 'activityTaskStartedEventAttributes')
        add('to the worker', at(i) - previous('activityTaskScheduledEventAttributes'));
      if (type === 'activityTaskCompletedEventAttributes')
        add('on the worker', at(i) - previous('activityTaskStartedEventAttributes'));
      if (
        type === 'workflowTaskStartedEventAttributes' &&
        events[i - 2]?.type === 'activityTaskCompletedEventAttributes'
      ) {
        add('back to the workflow', at(i) - at(i - 2));
      }
    }
    add('before the run', at(0) - run.atMs);
    tasks.forEach((ms, i) =>
      add(i === 0 ? 'first workflow task' : i === tasks.length - 1 ? 'last workflow task' : 'workflow task', ms),
    );
    add('after the last task started', run.atMs + run.ms - lastTaskStart);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const rows = [...segments].map(
    ([name, xs]) => `${name} ${median(xs).toFixed(0)} ms (×${(xs.length / runs.length).toFixed(0)})`,
  );
  return `${what}, medians over ${runs.length} runs: ${rows.join('; ')}`;
}

/** Runs `script` (a bench file) under tsx with `args`; resolves once it printed `ready` on stdout. */
async function spawnReady(args: string[], env: NodeJS.ProcessEnv, ready: RegExp) {
  // BENCH_CPU_PROF_DIR: each child writes a CPU profile there when it exits (node --cpu-prof).
  const profiling = process.env.BENCH_CPU_PROF_DIR
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF_DIR}`]
    : [];
  const child = spawn(process.execPath, [...profiling, '--import', 'tsx', ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout.on('data', (chunk: Buffer) => (log += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (log += chunk.toString()));
  const exited = once(child, 'exit');
  for (let i = 0; i < 600 && !ready.test(log); i++) {
    if (child.exitCode !== null) break;
    await sleep(100);
  }
  if (!ready.test(log)) {
    child.kill('SIGKILL');
    throw new Error(`${args.join(' ')} did not start:\n${log}`);
  }
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await Promise.race([exited, sleep(15_000)]);
    if (child.exitCode === null) child.kill('SIGKILL');
  };
  return { child, log: () => log, stop };
}

/**
 * The engine's floor: a one-activity workflow (bench/temporal-floor-workflow.ts) whose workflow Worker runs here
 * and whose activity runs in another process (bench/temporal-floor-activity.ts), as a cell worker's step does.
 */
async function benchFloor(address: string, namespace: string) {
  const suffix = randomUUID().slice(0, 8);
  const taskQueue = `bench-floor-${suffix}`;
  const activityQueue = `bench-floor-activity-${suffix}`;
  const activityProcess = await spawnReady(
    [fileURLToPath(new URL('./temporal-floor-activity.ts', import.meta.url)), address, namespace, activityQueue],
    process.env,
    /^polling$/m,
  );
  const connection = await NativeConnection.connect({ address });
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue,
    workflowBundle: await bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('./temporal-floor-workflow.ts', import.meta.url)),
      logger: new DefaultLogger('WARN'),
    }),
  });
  const running = worker.run();
  const client = new Client({ connection: await Connection.connect({ address }), namespace });
  const lastRun: Sent = { workflowId: '', atMs: 0, ms: 0 };
  let runs: Sent[] | undefined;
  const run = async () => {
    const atMs = Date.now();
    const t = performance.now();
    const workflowId = `floor-${randomUUID()}`;
    await client.workflow.execute('oneActivity', { taskQueue, workflowId, args: [activityQueue] });
    Object.assign(lastRun, { workflowId, atMs, ms: performance.now() - t });
    runs?.push({ ...lastRun });
  };
  try {
    const sequential: Sent[] = (runs = []);
    const latency = await measure(run, SEQUENTIAL);
    runs = undefined;
    const story = await timeline(
      client,
      lastRun.workflowId,
      'one bare one-activity workflow (activity in another process)',
      lastRun.ms,
    );
    // The warm-up runs are not profiled.
    const segments = await profile(client, sequential.slice(3), 'bare one-activity workflows (the floor)');
    const perSecond = await throughput(run, CONCURRENT_JOBS);
    // The 4-step chain's floor: four activities in a row, in the same processes.
    const four = await measure(async () => {
      const workflowId = `floor-four-${randomUUID()}`;
      await client.workflow.execute('fourActivities', { taskQueue, workflowId, args: [activityQueue] });
    }, SEQUENTIAL);
    return { ...latency, four, perSecond, story: `${story}\n  ${segments}` };
  } finally {
    worker.shutdown();
    await running;
    await client.connection.close();
    await connection.close();
    await activityProcess.stop();
  }
}

/**
 * `geofabric worker` as its own process (the CLI under tsx) in the bench cell, on `runtime`, registered with `gw`
 * and polling its cell's queue under `prefix`; resolves once the gateway routes a job to it and it serves it.
 */
async function startCellWorker(
  gw: TestGateway,
  options: { address: string; namespace: string; prefix: string; runtimeUrl: string },
) {
  const dataDir = mkdtempSync(join(tmpdir(), 'geofabric-bench-worker-'));
  const worker = await spawnReady(
    [join(ROOT, 'bin/geofabric.ts'), 'worker'],
    {
      ...process.env,
      DATA_DIR: dataDir,
      GATEWAY_URL: gw.url,
      LOG_LEVEL: 'info',
      TEMPORAL_ADDRESS: options.address,
      TEMPORAL_NAMESPACE: options.namespace,
      TASK_QUEUE_PREFIX: options.prefix,
      WORKER_CELL: BENCH_CELL,
      WORKER_RUNTIME_URL: options.runtimeUrl,
      WORKER_MODELS: DEFAULT_WORKER_MODEL,
      PREWARM_MODELS: '',
      WORKER_TOOLS: '',
    },
    /worker: started/,
  );
  const stop = async () => {
    await worker.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    // Routing counts the worker once Temporal has seen it poll: until then jobs go to the backbone.
    const pk = /"node_pk":"([0-9a-f]+)"/.exec(worker.log())?.[1];
    const alice = generateKeyPair();
    for (let i = 0; ; i++) {
      const { body, headers } = signJob(alice, singleStep());
      const res = await gw.post('/v1/compute', body, headers);
      if ((res.body as { worker_pk?: string }).worker_pk === pk) break;
      if (i === 100) throw new Error(`the cell worker ${pk} never served a job: ${res.text}\n${worker.log()}`);
      await sleep(200);
    }
    return { pk: pk!, stop };
  } catch (error) {
    await stop();
    throw error;
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
  // The runtime of both runners' workers: the embedded gateway's own worker and the `geofabric worker` process.
  const runtime = await startFakeRuntime('worker', () => ({ content: 'ok' }));
  try {
    const floor = await benchFloor(engines.address, namespace);

    const embedded = await startGateway({ swarm: { backboneUrl: backbone.url }, jobWaitMs: 30_000 });
    const onEmbedded = await benchRunner(embedded).finally(() => embedded.close());
    // The same steps on the embedded gateway's own worker, on the worker runtime.
    const embeddedWorker = await startGateway({
      swarm: { backboneUrl: backbone.url, workerRuntimeUrl: runtime.url, workerModels: [DEFAULT_WORKER_MODEL] },
      jobWaitMs: 30_000,
    });
    const onEmbeddedWorker = await benchRunner(embeddedWorker, { by: embeddedWorker.node.publicKey }).finally(() =>
      embeddedWorker.close(),
    );

    const temporalGateway = (eager: boolean) =>
      startTemporalGateway({
        address: engines.address,
        namespace,
        naming: { prefix: `bench-${randomUUID().slice(0, 8)}`, routingResolution: 5 },
        gateway: { swarm: { backboneUrl: backbone.url }, jobWaitMs: 30_000 },
        runner: { waitMs: 30_000, runTimeoutMs: 60_000 },
        eager,
      });
    const onTemporal = async (eager: boolean) => {
      const { gw, client, close } = await temporalGateway(eager);
      let story = '';
      const what = `one single-step job on temporal${eager ? '' : ' (update-with-start)'}`;
      const figures = await benchRunner(gw, {
        afterSingle: async () => {
          story = await timeline(client, workflowIdOf(last.jobId), what, last.ms);
        },
      }).finally(close);
      return { ...figures, story };
    };
    const eager = CELL_ONLY ? null : await onTemporal(true);
    const withUpdate = CELL_ONLY ? null : await onTemporal(false);

    // The swarm path: each step on the queue of a `geofabric worker` process polling the job's cell.
    const onCellWorker = async () => {
      const prefix = `bench-${randomUUID().slice(0, 8)}`;
      const { gw, client, close } = await startTemporalGateway({
        address: engines.address,
        namespace,
        naming: { prefix, routingResolution: 5 },
        gateway: { swarm: { backboneUrl: backbone.url }, jobWaitMs: 30_000 },
        runner: { waitMs: 30_000, runTimeoutMs: 60_000 },
      });
      const stories: string[] = [];
      try {
        const worker = await startCellWorker(gw, {
          address: engines.address,
          namespace,
          prefix,
          runtimeUrl: runtime.url,
        });
        try {
          const figures = await benchRunner(gw, {
            by: worker.pk,
            afterSingle: async () => {
              stories.push(
                await timeline(client, workflowIdOf(last.jobId), 'one single-step job on a cell worker', last.ms),
              );
            },
            afterFour: async () => {
              stories.push(
                await timeline(client, workflowIdOf(last.jobId), 'one 4-step chain on a cell worker', last.ms),
              );
            },
          });
          stories.push(await profile(client, figures.singleJobs, 'single-step jobs on a cell worker'));
          stories.push(await profile(client, figures.fourJobs, '4-step chains on a cell worker'));
          return { ...figures, stories };
        } finally {
          await worker.stop();
        }
      } finally {
        await close();
      }
    };
    const cell = await onCellWorker();

    const row = (name: string, r: { single: { p50: number; p99: number }; four: { p50: number; p99: number } }) =>
      `${name.padEnd(34)} single-step p50 ${fmt(r.single.p50)}, p99 ${fmt(r.single.p99)}; ` +
      `4-step chain p50 ${fmt(r.four.p50)}, p99 ${fmt(r.four.p99)}`;
    console.log(`sequential jobs (${SEQUENTIAL} each), POST /v1/compute to the finished job:`);
    console.log(`  ${row('embedded, backbone', onEmbedded)}`);
    if (eager) console.log(`  ${row('temporal, backbone (local steps)', eager)}`);
    if (withUpdate) console.log(`  ${row('temporal, update-with-start', withUpdate)}`);
    console.log(`  ${row('embedded, its own worker', onEmbeddedWorker)}`);
    console.log(`  ${row('temporal, cell worker process', cell)}`);
    console.log(
      `  engine floor: one-activity workflow, activity in another process, client.workflow.execute p50 ${fmt(floor.p50)}, p99 ${fmt(floor.p99)}; ` +
        `four activities in a row p50 ${fmt(floor.four.p50)}, p99 ${fmt(floor.four.p99)}`,
    );
    if (eager) console.log(`  ${eager.story}`);
    if (withUpdate) console.log(`  ${withUpdate.story}`);
    for (const story of cell.stories) console.log(`  ${story}`);
    console.log(`  ${floor.story}`);
    console.log(`throughput, ${CONCURRENT_JOBS} single-step jobs at ${CONCURRENCY} concurrent:`);
    console.log(`  embedded, backbone ${onEmbedded.perSecond.toFixed(1)} jobs/s`);
    if (eager) console.log(`  temporal, backbone ${eager.perSecond.toFixed(1)} jobs/s`);
    if (withUpdate) console.log(`  temporal, update-with-start ${withUpdate.perSecond.toFixed(1)} jobs/s`);
    console.log(`  embedded, its own worker ${onEmbeddedWorker.perSecond.toFixed(1)} jobs/s`);
    console.log(`  temporal, cell worker process ${cell.perSecond.toFixed(1)} jobs/s`);
    console.log(`  engine floor ${floor.perSecond.toFixed(1)} one-activity workflows/s`);
    const ratio = (a: number, b: number) => (a / b).toFixed(2);
    console.log(
      `goals: ${eager ? `backbone temporal/embedded single-step p50 ${ratio(eager.single.p50, onEmbedded.single.p50)}× (goal ≤ 3×); ` : ''}` +
        `cell worker temporal/embedded single-step p50 ${ratio(cell.single.p50, onEmbeddedWorker.single.p50)}× (goal ≤ 3×), ` +
        `4-step chain ${ratio(cell.four.p50, onEmbeddedWorker.four.p50)}× (goal ≤ 3×), ` +
        `jobs/s / floor workflows/s ${ratio(cell.perSecond, floor.perSecond)} (goal ≥ 0.8)`,
    );
    // Beside the goals, the same jobs against the engine's floor: what is ours in the path.
    console.log(
      `against the engine floor: cell single-step p50 ${ratio(cell.single.p50, floor.p50)}× the one-activity workflow's, ` +
        `4-step chain ${ratio(cell.four.p50, floor.four.p50)}× four activities in a row; ` +
        `the floor is ${ratio(floor.p50, onEmbeddedWorker.single.p50)}× and ${ratio(floor.four.p50, onEmbeddedWorker.four.p50)}× embedded`,
    );
    console.log(
      `load after: ${loadavg()
        .map((n) => n.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    await backbone.close();
    await runtime.close();
    engines.stop();
  }
}

await main();
process.exit(0);
