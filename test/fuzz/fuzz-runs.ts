/**
 * How many cases each fuzz or property check runs, and the tally printed after a suite.
 *
 * `FUZZ_RUNS` (a positive integer) overrides every default: `FUZZ_RUNS=2000 npx mocha test/fuzz test/property`
 * is the long run; without it the defaults keep `npm test` fast. `FUZZ_SEED` replays one fast-check seed
 * (printed with every failure) across all properties.
 */
import type fc from 'fast-check';

export function fuzzRuns(defaultRuns: number): number {
  const raw = process.env.FUZZ_RUNS;
  if (raw === undefined || raw === '') return defaultRuns;
  const runs = Number(raw);
  if (!Number.isSafeInteger(runs) || runs < 1) throw new TypeError(`FUZZ_RUNS must be a positive integer, got ${raw}`);
  return runs;
}

/** True when FUZZ_RUNS asks for more than the defaults: timeouts grow with it. */
export const longRun = (): boolean => Number(process.env.FUZZ_RUNS ?? 0) > 200;

/** fast-check parameters for one property: the run count, and the replay seed when one is given. */
export function fcParams<T>(runs: number): fc.Parameters<T> {
  const seed = process.env.FUZZ_SEED;
  return seed === undefined || seed === '' ? { numRuns: runs } : { numRuns: runs, seed: Number(seed) };
}

/** A mocha timeout for `cases` cases of about `msPerCase` each, with headroom for a shared, loaded machine. */
export const timeoutFor = (cases: number, msPerCase: number): number => Math.max(20_000, 4 * cases * msPerCase);

/**
 * Counts cases per (property, family) and prints one line per family, so a CI log shows how much was
 * fuzzed and that nothing answered 5xx: `[fuzz] gateway raw-body /v1/compute: 120 cases, 0 5xx`.
 */
export class CaseTally {
  private readonly counts = new Map<
    string,
    { cases: number; fivexx: number; http: boolean; statuses: Map<number, number> }
  >();

  /** `kind` prefixes every line: `fuzz` (requests, with their 5xx count) or `property`. */
  constructor(
    private readonly kind: 'fuzz' | 'property',
    private readonly suite: string,
  ) {}

  /** `expected5xx`: a 5xx the route documents for a valid request (docs/protocol.md §7's 503 no_workers), not counted as one. */
  add(property: string, family: string, status?: number, expected5xx = false): void {
    const key = `${property}\u0000${family}`;
    const entry = this.counts.get(key) ?? { cases: 0, fivexx: 0, http: false, statuses: new Map<number, number>() };
    entry.cases++;
    if (status !== undefined) {
      entry.http = true;
      entry.statuses.set(status, (entry.statuses.get(status) ?? 0) + 1);
    }
    if (status !== undefined && status >= 500 && !expected5xx) entry.fivexx++;
    this.counts.set(key, entry);
  }

  get total(): number {
    return [...this.counts.values()].reduce((sum, e) => sum + e.cases, 0);
  }

  lines(): string[] {
    const rows = [...this.counts.entries()]
      .map(([key, e]) => ({ key: key.split('\u0000') as [string, string], ...e }))
      .sort((a, b) => a.key[0].localeCompare(b.key[0]) || a.key[1].localeCompare(b.key[1]));
    const fivexx = rows.reduce((sum, r) => sum + r.fivexx, 0);
    const http = rows.some((r) => r.http);
    return [
      ...rows.map((r) => {
        // Which answers the cases got (`400×31 401×12 200×2`): how deep the fuzzing reached.
        const statuses = [...r.statuses.entries()]
          .sort((a, b) => b[1] - a[1])
          .map(([status, n]) => `${status}×${n}`)
          .join(' ');
        const http = r.http ? `, ${r.fivexx} 5xx (${statuses})` : '';
        return `[${this.kind}] ${this.suite} ${r.key[0]} ${r.key[1]}: ${r.cases} cases${http}`;
      }),
      `[${this.kind}] ${this.suite} total: ${this.total} cases${http ? `, ${fivexx} 5xx` : ''}`,
    ];
  }

  print(): void {
    for (const line of this.lines()) console.log(line);
  }
}
