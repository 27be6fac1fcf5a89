// A private engine pair (the Temporal dev server and FerretDB) for one bench run: scripts/engines.sh with a state
// file of the run's own, so it never touches another run's pair, stopped and deleted by `stop`.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface EnginePair {
  /** A `NAME=value` line of the pair's state file (TEMPORAL_ADDRESS, MONGODB_URI, FERRETDB_PID …). */
  value(name: string): string | undefined;
  stop(): void;
}

/** Installs what is missing and starts the pair; `env` goes to both engines (GOMEMLIMIT …). */
export function startEnginePair(env: Record<string, string> = {}): EnginePair {
  const dir = mkdtempSync(join(tmpdir(), 'geofabric-bench-engines-'));
  const state = join(dir, 'engines.env');
  const run = (command: string) =>
    execFileSync('bash', ['scripts/engines.sh', command], {
      cwd: ROOT,
      env: { ...env, ...process.env, GEOFABRIC_ENGINES_STATE: state },
      stdio: ['ignore', 'pipe', 'inherit'],
    }).toString();
  const stop = () => {
    run('stop');
    rmSync(dir, { recursive: true, force: true });
  };
  run('install');
  const printed = run('start');
  const written = readFileSync(state, 'utf8');
  const value = (name: string) => new RegExp(`^${name}=(.+)$`, 'm').exec(written)?.[1];
  if (!value('TEMPORAL_ADDRESS') || !value('MONGODB_URI')) {
    stop();
    throw new Error(`scripts/engines.sh start wrote no TEMPORAL_ADDRESS or MONGODB_URI:\n${printed}`);
  }
  return { value, stop };
}
