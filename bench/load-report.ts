/**
 * Pure helpers of `npm run bench:load` (bench/load.ts): settings from the environment, the per-scenario summary
 * of an autocannon result and its verdict, the service's warn/error log lines, the `store audit` report, and
 * which epoch must be sealed before the service stops. No I/O here, so test/bench/load-report.test.ts covers it.
 */
import type autocannon from 'autocannon';
import { epochAt } from '../core/epoch.js';

/** A positive integer setting (BENCH_LOAD_SECONDS, BENCH_LOAD_CONNECTIONS); a typo stops the run, never guesses. */
export function positiveIntSetting(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value.trim() === '') return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw new RangeError(`${name} must be a positive integer, got "${value}"`);
  return n;
}

export interface ScenarioSummary {
  name: string;
  /** Completed responses (any status). */
  requests: number;
  /** Mean of autocannon's per-second samples. */
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Mean response bytes per second. */
  bytesPerSecond: number;
  /** Responses by HTTP status. */
  statuses: Record<string, number>;
  /** Responses whose status is not one the scenario expects. */
  unexpected: Record<string, number>;
  /** Connection errors, timeouts included (autocannon counts both in `errors`). */
  errors: number;
  timeouts: number;
}

type ResultFields = Pick<
  autocannon.Result,
  'requests' | 'latency' | 'throughput' | 'errors' | 'timeouts' | 'statusCodeStats'
>;

export function summarizeScenario(
  name: string,
  result: ResultFields,
  expected: readonly number[] = [200],
): ScenarioSummary {
  const statuses: Record<string, number> = {};
  for (const [code, stat] of Object.entries(result.statusCodeStats ?? {})) {
    if ((stat?.count ?? 0) > 0) statuses[code] = stat.count ?? 0;
  }
  const unexpected = Object.fromEntries(Object.entries(statuses).filter(([code]) => !expected.includes(Number(code))));
  return {
    name,
    requests: Object.values(statuses).reduce((sum, n) => sum + n, 0),
    perSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    maxMs: result.latency.max,
    bytesPerSecond: result.throughput.average,
    statuses,
    unexpected,
    errors: result.errors,
    timeouts: result.timeouts,
  };
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
/** autocannon records latency in whole milliseconds: 0 means under one. */
const ms = (n: number) => (n === 0 ? '<1' : String(Math.round(n)));

export function formatScenario(s: ScenarioSummary): string {
  const non2xx = Object.entries(s.statuses).filter(([code]) => !code.startsWith('2'));
  return (
    `${s.name.padEnd(8)} ${fmt(s.perSecond).padStart(7)} req/s  p50 ${ms(s.p50Ms).padStart(4)} ms  ` +
    `p99 ${ms(s.p99Ms).padStart(4)} ms  max ${ms(s.maxMs).padStart(5)} ms  ` +
    `${(s.bytesPerSecond / 1e6).toFixed(1).padStart(5)} MB/s  ${fmt(s.requests).padStart(7)} responses  ` +
    `non-2xx ${non2xx.length === 0 ? 'none' : JSON.stringify(Object.fromEntries(non2xx))}  ` +
    `errors ${s.errors} (timeouts ${s.timeouts})`
  );
}

/** Why a scenario fails the run: unexpected statuses, connection errors, or no response at all. */
export function scenarioProblems(s: ScenarioSummary): string[] {
  const problems = Object.entries(s.unexpected).map(([code, n]) => `${s.name}: ${n} × HTTP ${code}`);
  if (s.errors > 0) problems.push(`${s.name}: ${s.errors} connection errors (${s.timeouts} timeouts)`);
  if (s.requests === 0) problems.push(`${s.name}: no responses`);
  return problems;
}

export interface LogSummary {
  warn: number;
  error: number;
  /** The first few warn-or-worse messages, for the printout. */
  samples: string[];
}

/** pino's JSON lines (level 40 warn, 50 error, 60 fatal); other lines (a stack on stdout) are ignored. */
export function summarizeLogLines(lines: readonly string[], maxSamples = 5): LogSummary {
  const out: LogSummary = { warn: 0, error: 0, samples: [] };
  for (const line of lines) {
    let entry: { level?: unknown; msg?: unknown; err?: { message?: unknown } };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      continue;
    }
    if (typeof entry.level !== 'number' || entry.level < 40) continue;
    if (entry.level >= 50) out.error += 1;
    else out.warn += 1;
    if (out.samples.length < maxSamples) {
      const why = typeof entry.err?.message === 'string' ? `: ${entry.err.message}` : '';
      out.samples.push(`[${entry.level >= 50 ? 'error' : 'warn'}] ${String(entry.msg ?? '')}${why}`);
    }
  }
  return out;
}

export interface AuditSummary {
  ok: boolean;
  writers: number;
  records: number;
  seals: number;
  problems: unknown[];
}

/** `geofabric store audit` prints one pretty-printed JSON report on stdout: `{ok, writers, records_checked, …}`. */
export function parseAuditReport(stdout: string): AuditSummary {
  const start = stdout.indexOf('{');
  if (start < 0) throw new Error(`store audit printed no report: ${JSON.stringify(stdout.slice(0, 200))}`);
  const report = JSON.parse(stdout.slice(start)) as Record<string, unknown>;
  const count = (key: string) => {
    const value = report[key];
    if (typeof value !== 'number') throw new Error(`store audit report has no numeric ${key}`);
    return value;
  };
  const counts = { writers: count('writers'), records: count('records_checked'), seals: count('seals_checked') };
  if (!Array.isArray(report.problems)) throw new Error('store audit report has no problems list');
  return { ok: report.ok === true, ...counts, problems: report.problems as unknown[] };
}

export const formatAudit = (a: AuditSummary): string =>
  `store audit: ok ${a.ok}, writers ${a.writers}, records ${fmt(a.records)}, seals ${a.seals}, problems ${a.problems.length}`;

/**
 * The audit requires every epoch that is due (closed for longer than the seal grace) to be sealed. Records of
 * the current epoch are never due during the run; but when the load started in an earlier epoch, that epoch
 * closed meanwhile and becomes due at most grace + one sealer tick after the hour, possibly between the service
 * stopping and the audit. Returns that epoch (the service must be kept running until it is sealed), else null.
 */
export function epochToSealBeforeStop(runStartMs: number, nowMs: number, genesisMs: number): number | null {
  const current = epochAt(nowMs, genesisMs);
  return epochAt(runStartMs, genesisMs) < current ? current - 1 : null;
}

/** BENCH_LOAD_WEB_CONCURRENCY: gateway process counts to run in turn (`1,2`); unset: one run of 1. */
export function processCounts(value: string | undefined): number[] {
  if (value === undefined || value.trim() === '') return [1];
  return value.split(',').map((part) => positiveIntSetting('BENCH_LOAD_WEB_CONCURRENCY', part.trim(), 1));
}

/** The runs' scenarios side by side: req/s and p99 per process count, and each count's rate against the first. */
export function formatComparison(
  runs: readonly { processes: number; summaries: readonly ScenarioSummary[] }[],
): string {
  const first = runs[0]!;
  const head = `scenario  ${runs.map((r) => `WEB_CONCURRENCY=${r.processes} req/s (p99)`.padEnd(32)).join('')}`;
  const rows = first.summaries.map((s) => {
    const cells = runs.map((r) => {
      const same = r.summaries.find((x) => x.name === s.name);
      if (!same) return '-'.padEnd(32);
      const ratio = r === first ? '' : ` ×${(same.perSecond / s.perSecond).toFixed(2)}`;
      return `${Math.round(same.perSecond).toLocaleString('en-US')} (${same.p99Ms} ms)${ratio}`.padEnd(32);
    });
    return `${s.name.padEnd(10)}${cells.join('')}`;
  });
  return [head, ...rows].join('\n');
}
