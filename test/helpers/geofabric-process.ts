import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

const ROOT = resolve(import.meta.dirname, '../..');

/** A `geofabric` child process, with its pino JSON log lines (stdout) and its stderr as they arrive. */
export interface GeofabricProcess {
  child: ChildProcess;
  lines: Record<string, unknown>[];
  stderr: () => string;
}

/**
 * The environment of an isolated `geofabric start` on `dataDir`: embedded runner and store, a free loopback port,
 * no MCP servers, no model runtime or central store inherited from the developer's shell; `extra` on top.
 */
export function embeddedGatewayEnv(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const base = { ...process.env };
  for (const name of [
    'WORKER_RUNTIME_URL',
    'BACKBONE_URL',
    'CENTRAL_STORE_URL',
    'NODE_SECRET_KEY',
    'STORE_MAX_MB',
    'METRICS_TOKEN',
  ]) {
    delete base[name];
  }
  return {
    ...base,
    DATA_DIR: dataDir,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    MONGODB_URI: '',
    ORCHESTRATOR: 'embedded',
    PERCEPTION_ENABLED: 'false',
    GOVERNANCE_ENABLED: 'false',
    PREWARM_MODELS: '',
    ...extra,
  };
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

/** `npx geofabric <args>` as a user runs it (the package's bin entry), to its end: exit code and output. */
export async function runGeofabricCli(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'geofabric.js'), ...args], {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const [code] = (await once(child, 'exit')) as [number];
  return { code, stdout, stderr };
}
