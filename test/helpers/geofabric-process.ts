import { spawn, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

const ROOT = resolve(import.meta.dirname, '../..');

/** A `geofabric` child process, with its pino JSON log lines (stdout) and its stderr as they arrive. */
export interface GeofabricProcess {
  child: ChildProcess;
  lines: Record<string, unknown>[];
  stderr: () => string;
}

/** Runs `geofabric <args>` from this checkout (tsx, no build) with exactly `env`. */
export function spawnGeofabric(args: string[], env: NodeJS.ProcessEnv): GeofabricProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bin', 'geofabric.ts'), ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const lines: Record<string, unknown>[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    try {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // not a log line
    }
  });
  return { child, lines, stderr: () => stderr };
}
