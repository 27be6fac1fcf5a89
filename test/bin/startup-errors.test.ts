/**
 * Startup failures through the CLI, as an operator meets them (docs/operations.md "Startup errors"): Temporal,
 * MongoDB or the gateway not reachable, a port taken. Each is one line on stderr naming the setting, its value
 * and what to do, with exit 1; no stack trace and no library text (tonic, the driver) unless LOG_LEVEL=debug.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '../../bin/config.js';
import { startWorker } from '../../bin/worker.js';
import { spawnGeofabric } from '../helpers/geofabric-process.js';

/** A port nothing listens on (the kernel gave it, then it was closed). */
async function closedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/** `geofabric <args>` run to its end, with this machine's service settings cleared. */
async function run(args: string[], env: Record<string, string>, dataDir: string) {
  const base = { ...process.env };
  for (const name of Object.keys(base))
    if (/^(WORKER_|BACKBONE_|CENTRAL_|MONGODB_|TEMPORAL_)/.test(name)) delete base[name];
  const proc = spawnGeofabric(args, {
    ...base,
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'info',
    ORCHESTRATOR: 'embedded',
    PERCEPTION_ENABLED: 'false',
    GOVERNANCE_ENABLED: 'false',
    PREWARM_MODELS: '',
    ...env,
  });
  const [code] = (await once(proc.child, 'exit')) as [number | null];
  const stdout = proc.lines.map((l) => JSON.stringify(l)).join('\n');
  return { code, stderr: proc.stderr(), stdout };
}

/** One line, no stack frames and none of the libraries' own words. */
function assertOneHumanLine(stderr: string, stdout: string): void {
  const lines = stderr.trim().split('\n');
  assert.equal(lines.length, 1, `one line on stderr, got:\n${stderr}`);
  assert.doesNotMatch(stderr + stdout, /\n\s+at |tonic|ConnectError|MongoServerSelectionError/);
}

describe('startup errors (bin/startup-errors.ts)', function () {
  this.timeout(60_000);
  let dataDir: string;
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'geofabric-startup-'));
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('Temporal not reachable: names TEMPORAL_ADDRESS, what to start and the embedded alternative; exit 1', async () => {
    const port = await closedPort();
    const { code, stderr, stdout } = await run(
      ['start'],
      { ORCHESTRATOR: 'temporal', TEMPORAL_ADDRESS: `127.0.0.1:${port}` },
      dataDir,
    );
    assert.equal(code, 1, stderr);
    assert.match(
      stderr,
      new RegExp(
        `^geofabric: TEMPORAL_ADDRESS=127\\.0\\.0\\.1:${port}: cannot reach Temporal \\(connection refused\\)\\. `,
      ),
    );
    assert.match(stderr, /Start Temporal there .* or set TEMPORAL_ADDRESS .*ORCHESTRATOR=embedded/);
    assertOneHumanLine(stderr, stdout);
  });

  it('with LOG_LEVEL=debug the library error follows the line', async () => {
    const port = await closedPort();
    const { code, stderr } = await run(
      ['start'],
      { ORCHESTRATOR: 'temporal', TEMPORAL_ADDRESS: `127.0.0.1:${port}`, LOG_LEVEL: 'debug' },
      dataDir,
    );
    assert.equal(code, 1, stderr);
    assert.match(stderr, /^geofabric: TEMPORAL_ADDRESS=/);
    assert.match(stderr, /tcp connect error|Connection refused/);
  });

  it('a port taken: names PORT and its address; exit 1', async () => {
    const taken: Server = createServer().listen(0, '127.0.0.1');
    await once(taken, 'listening');
    const { port } = taken.address() as { port: number };
    try {
      const { code, stderr, stdout } = await run(['start'], { PORT: String(port) }, dataDir);
      assert.equal(code, 1, stderr);
      assert.match(
        stderr,
        new RegExp(`^geofabric: PORT=${port}: 127\\.0\\.0\\.1:${port} is already in use .*set PORT to a free port\\.`),
      );
      assertOneHumanLine(stderr, stdout);
    } finally {
      taken.close();
    }
  });

  it('MongoDB not reachable: names MONGODB_URI without its password; exit 1', async () => {
    const port = await closedPort();
    const uri = `mongodb://alice:s3cret@127.0.0.1:${port}/geo?serverSelectionTimeoutMS=500`;
    const { code, stderr, stdout } = await run(['start'], { MONGODB_URI: uri }, dataDir);
    assert.equal(code, 1, stderr);
    assert.match(stderr, /^geofabric: MONGODB_URI=mongodb:\/\/\*\*\*@127\.0\.0\.1:\d+\/geo\S*: cannot reach MongoDB/);
    assert.doesNotMatch(stderr, /s3cret/);
    assertOneHumanLine(stderr, stdout);
  });

  it('a worker whose gateway never answers: names GATEWAY_URL and what to start', async () => {
    const port = await closedPort();
    const config = loadConfig({
      DATA_DIR: dataDir,
      GATEWAY_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: 'silent',
      WORKER_RELAY: 'true',
    });
    await assert.rejects(
      startWorker(config, {
        logger: pino({ level: 'silent' }),
        hardware: { platform: 'linux-x64', gpu: null, vram_gb: 0, ram_gb: 16, cores: 8 },
        registerWaitMs: 0,
      }),
      {
        name: 'StartupError',
        message: new RegExp(
          `^GATEWAY_URL=http://127\\.0\\.0\\.1:${port}: no gateway answered for \\d+ s \\(connection refused\\)\\. ` +
            'Start the gateway',
        ),
      },
    );
  });
});
