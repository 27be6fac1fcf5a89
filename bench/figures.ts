// Machine-readable bench results: every section hands back a list of figures, `npm run bench -- --json FILE`
// (or BENCH_JSON=FILE) writes them all, so numbers can be tracked across commits (docs/benchmarks.md).
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';

/** One measured figure. A ratio is only ever against a floor measured in the same run. */
export interface Figure {
  /** Stable id, `section.what` (e.g. `gates.signed_rejects`): the key to track across commits. */
  name: string;
  value: number;
  /** `/s`, `records/s`, `ms`, `µs`, `ns`, `s`, `MiB`, `count`, `ratio`. */
  unit: string;
  /** What it is compared to: another figure of the same run (by name) with its value, or a fixed target. */
  floor?: { name: string; value: number; unit: string };
  /** value / floor.value, when the two are comparable. */
  ratio?: number;
  /** The goal, in words (`ratio ≥ 0.8`, `≤ 0.5 ms`), when there is one. */
  goal?: string;
  /** Whether the goal is met, when there is a goal. */
  met?: boolean;
}

/** A figure compared to its floor: `ratio` filled in. */
export function against(
  figure: Omit<Figure, 'floor' | 'ratio'>,
  floor: Figure | { name: string; value: number; unit: string },
): Figure {
  return {
    ...figure,
    floor: { name: floor.name, value: floor.value, unit: floor.unit },
    ratio: floor.value === 0 ? undefined : figure.value / floor.value,
  };
}

/** Where to write JSON: `--json FILE` on the command line, else BENCH_JSON; undefined: nowhere. */
export function jsonTarget(argv: string[] = process.argv.slice(2), env = process.env): string | undefined {
  const at = argv.indexOf('--json');
  if (at >= 0) {
    const file = argv[at + 1];
    if (file === undefined || file.startsWith('--')) throw new Error('--json needs a file name');
    return file;
  }
  const inline = argv.find((a) => a.startsWith('--json='));
  if (inline !== undefined) return inline.slice('--json='.length);
  return env.BENCH_JSON || undefined;
}

const commit = (): string | null => {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: 'pipe' }).trim();
  } catch {
    return null;
  }
};

export interface BenchReport {
  date: string;
  commit: string | null;
  machine: {
    cores: number;
    cpu: string;
    node: string; /** One-minute load average at the start and the end of the run: other work on the machine skews rates. */
    loadavg?: number[];
  };
  settings: Record<string, string>;
  figures: Figure[];
}

export function resultsDocument(figures: Figure[], loadavg?: number[]): BenchReport {
  return {
    date: new Date().toISOString(),
    commit: commit(),
    machine: { cores: cpus().length, cpu: cpus()[0]?.model ?? 'cpu', node: process.version, loadavg },
    settings: Object.fromEntries(
      Object.entries(process.env).filter(([k, v]) => k.startsWith('BENCH_') && k !== 'BENCH_JSON' && v !== undefined),
    ) as Record<string, string>,
    figures,
  };
}

export function writeBenchJson(file: string, report: BenchReport): void {
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
}

const show = (n: number, unit: string): string => {
  const digits = Math.abs(n) >= 100 ? 0 : Math.abs(n) >= 10 ? 1 : 2;
  return `${n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 })} ${unit}`;
};

/** The figures as a Markdown table (docs/benchmarks.md "Latest figures"). */
export function markdownTable(figures: Figure[]): string {
  const rows = figures.map((f) => [
    `\`${f.name}\``,
    show(f.value, f.unit),
    f.floor ? `${show(f.floor.value, f.floor.unit)} (\`${f.floor.name}\`)` : '',
    f.ratio === undefined ? '' : f.ratio.toFixed(2),
    f.goal === undefined ? '' : `${f.goal}${f.met === undefined ? '' : f.met ? ' ✓' : ' ✗'}`,
  ]);
  const head = ['Figure', 'Value', 'Floor (same run)', 'Ratio', 'Goal'];
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}
