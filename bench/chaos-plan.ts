/**
 * The pure half of `npm run chaos` (bench/chaos.ts): the seeded random source, the settings, the fault
 * schedule's choices, latency figures and the figures table of docs/operations.md "Chaos under load". No I/O,
 * so a seed replays the same choices and the unit test (test/bench/chaos-plan.test.ts) pins them.
 */

/** mulberry32: a small, fast 32-bit PRNG; the same seed gives the same sequence on every machine. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export type Random = () => number;

export const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
export const between = (random: Random, min: number, max: number): number => min + random() * (max - min);

export interface ChaosSettings {
  seed: number;
  /** Seconds of load with faults; then the faults stop and the system quiesces. */
  durationS: number;
  /** Mean seconds between two faults (each gap is uniform in [0.5, 1.5] × this). */
  faultEveryS: number;
  /** Concurrent clients submitting jobs (each also sends chat and MCP calls). */
  clients: number;
  /** Pause between two requests of one client, ms. */
  thinkMs: number;
  /** How far ahead the skewed worker's clock runs (faketime), s. */
  skewS: number;
  /** How long a SIGSTOP lasts, s: longer than the 20 s activity heartbeat timeout and the 30 s liveness window. */
  pauseS: number;
  /** Restart delay after a kill -9: uniform in [1, this] s. */
  restartMaxS: number;
  keep: boolean;
  /** The job kinds the clients send (each as likely), from JOB_KINDS. */
  jobs: string[];
}

/** The compound jobs the clients send; inference on the cell workers counts twice (the common case). */
export const JOB_KINDS = ['inference-cell', 'inference-backbone', 'tiles', 'ndvi', 'flood', 'fusion'] as const;

/** Documented script settings (they configure the harness, not the gateway, so they are not in bin/config.ts). */
export const CHAOS_SETTING_DOCS: Record<string, string> = {
  CHAOS_SEED: 'the run seed (default: random, printed first); the same seed replays the same choices',
  CHAOS_DURATION_S: 'seconds of load under faults (default 240)',
  CHAOS_FAULT_EVERY_S: 'mean seconds between faults (default 12)',
  CHAOS_CLIENTS: 'concurrent job clients (default 3)',
  CHAOS_THINK_MS: 'pause between two requests of a client (default 1500)',
  CHAOS_SKEW_S: 'seconds the skewed worker runs ahead (default 45; the tightest documented tolerance is 60 s)',
  CHAOS_PAUSE_S: 'SIGSTOP length (default 40: beyond the 20 s heartbeat timeout and the 30 s liveness window)',
  CHAOS_RESTART_MAX_S: 'longest restart delay after kill -9 (default 8)',
  CHAOS_KEEP: '1 keeps the run directory (logs, stores, client logs)',
  CHAOS_JOBS: `the job kinds sent, comma-separated (default all: ${JOB_KINDS.join(',')})`,
};

function intSetting(env: Record<string, string | undefined>, name: string, fallback: number, min: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min)
    throw new RangeError(`${name} must be an integer ≥ ${min}, got "${raw}"`);
  return value;
}

export function chaosSettings(env: Record<string, string | undefined>, randomSeed: () => number): ChaosSettings {
  return {
    seed: env.CHAOS_SEED ? intSetting(env, 'CHAOS_SEED', 0, 0) >>> 0 : randomSeed() >>> 0,
    durationS: intSetting(env, 'CHAOS_DURATION_S', 240, 10),
    faultEveryS: intSetting(env, 'CHAOS_FAULT_EVERY_S', 12, 2),
    clients: intSetting(env, 'CHAOS_CLIENTS', 3, 1),
    thinkMs: intSetting(env, 'CHAOS_THINK_MS', 1500, 0),
    skewS: intSetting(env, 'CHAOS_SKEW_S', 45, 0),
    pauseS: intSetting(env, 'CHAOS_PAUSE_S', 40, 1),
    restartMaxS: intSetting(env, 'CHAOS_RESTART_MAX_S', 8, 1),
    keep: env.CHAOS_KEEP === '1',
    jobs: jobKinds(env.CHAOS_JOBS),
  };
}

function jobKinds(raw: string | undefined): string[] {
  if (raw === undefined || raw.trim() === '') return ['inference-cell', ...JOB_KINDS];
  const kinds = raw.split(',').map((k) => k.trim());
  const unknown = kinds.filter((k) => !(JOB_KINDS as readonly string[]).includes(k));
  if (unknown.length > 0 || kinds.length === 0) {
    throw new RangeError(`CHAOS_JOBS: unknown job kind(s) ${unknown.join(', ')}; known: ${JOB_KINDS.join(', ')}`);
  }
  return kinds;
}

export type ProcessKind = 'gateway' | 'worker' | 'temporal' | 'ferretdb';
export const PROCESS_KINDS: readonly ProcessKind[] = ['gateway', 'worker', 'temporal', 'ferretdb'];
export type FaultKind = 'kill' | 'pause' | 'term';

export interface FaultChoice {
  kind: FaultKind;
  target: ProcessKind;
}

/**
 * The n-th fault: the first four are kill -9 of each process kind (in a seeded order) so every kind is hit even
 * in a short run; after that kills (55 %), pauses (25 %) and graceful gateway restarts (20 %).
 */
export function faultChoice(random: Random, n: number, firstKills: readonly ProcessKind[]): FaultChoice {
  if (n < firstKills.length) return { kind: 'kill', target: firstKills[n]! };
  const r = random();
  if (r < 0.55) return { kind: 'kill', target: pick(random, PROCESS_KINDS) };
  if (r < 0.8) return { kind: 'pause', target: pick(random, ['gateway', 'worker', 'worker', 'ferretdb'] as const) };
  return { kind: 'term', target: 'gateway' };
}

export function shuffled<T>(random: Random, items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** Nearest-rank percentile of `values` (p in 0–100); NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

export interface Interval {
  start: number;
  end: number;
}

/** True when [start, end] overlaps any of `intervals`. */
export const overlapsAny = (start: number, end: number, intervals: readonly Interval[]): boolean =>
  intervals.some((i) => i.start <= end && start <= i.end);

export interface Figures {
  seed: number;
  runS: number;
  loadS: number;
  clients: number;
  submitted: number;
  completed: number;
  failed: number;
  faults: Record<string, number>;
  violations: number;
  latencyFaultFree: readonly number[];
  latencyDuringFaults: readonly number[];
  longestFaultWaitMs: number;
  chats: number;
  mcpCalls: number;
  readings: number;
}

const ms = (v: number) => (Number.isNaN(v) ? '–' : `${(v / 1000).toFixed(2)} s`);

/** The figures table (Markdown) of one run, as docs/operations.md shows it. */
export function figuresTable(f: Figures): string {
  const faults = Object.entries(f.faults)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  const total = Object.values(f.faults).reduce((a, b) => a + b, 0);
  const rows: [string, string][] = [
    ['seed', String(f.seed)],
    ['run length', `${Math.round(f.runS)} s (${Math.round(f.loadS)} s of load under faults)`],
    ['load', `${f.clients} job clients, plus chat, MCP and one telemetry device`],
    ['jobs submitted / completed / failed', `${f.submitted} / ${f.completed} / ${f.failed}`],
    ['chat completions, MCP tool calls, readings acknowledged', `${f.chats}, ${f.mcpCalls}, ${f.readings}`],
    ['faults injected', `${total}: ${faults}`],
    ['invariant violations', String(f.violations)],
    [
      'job latency p50 / p99 without faults',
      `${ms(percentile(f.latencyFaultFree, 50))} / ${ms(percentile(f.latencyFaultFree, 99))} (${f.latencyFaultFree.length} jobs)`,
    ],
    [
      'job latency p50 / p99 during faults',
      `${ms(percentile(f.latencyDuringFaults, 50))} / ${ms(percentile(f.latencyDuringFaults, 99))} (${f.latencyDuringFaults.length} jobs)`,
    ],
    ['longest wait caused by a fault', ms(f.longestFaultWaitMs)],
  ];
  return ['| Figure | Value |', '| --- | --- |', ...rows.map(([k, v]) => `| ${k} | ${v} |`)].join('\n');
}
