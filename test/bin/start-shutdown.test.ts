/**
 * `geofabric start` stops gracefully: on SIGTERM the listener closes (a new connection is refused),
 * idle keep-alive connections close at once, a request in flight finishes with its answer, and the process
 * exits 0; a request still running when SHUTDOWN_DRAIN_SECONDS is up is cut and the process still exits 0.
 * The slow request is a tile whose upstream (a local XYZ server) answers after a delay.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, get, type IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_JOB_CELL } from '../../core/h3-cell.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteWorkerRegistry } from '../../store/sqlite/worker-registry.js';
import { startFakeRuntime } from '../helpers/fake-openai-runtime.js';
import { startXyzServer, type XyzServer } from '../helpers/xyz-server.js';
import { embeddedGatewayEnv, spawnGeofabric } from '../helpers/geofabric-process.js';

const TILE = `/v1/tiles/${DEFAULT_JOB_CELL}/12/osm-bright.png`;

async function waitFor<T>(what: string, probe: () => T | null | undefined, ms = 20_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = probe();
    if (value !== null && value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface Started {
  child: ChildProcess;
  url: string;
  port: number;
  lines: Record<string, unknown>[];
  stderr: () => string;
}

async function startGeofabric(dataDir: string, env: Record<string, string>): Promise<Started> {
  const { child, lines, stderr } = spawnGeofabric(['start'], embeddedGatewayEnv(dataDir, env));
  const url = await waitFor('the gateway', () => {
    if (child.exitCode !== null) throw new Error(`start exited ${child.exitCode}: ${stderr()}`);
    const listening = lines.find((l) => l.msg === 'geofabric gateway listening');
    return typeof listening?.url === 'string' ? listening.url : null;
  });
  return { child, url, port: Number(new URL(url).port), lines, stderr };
}

/** A GET with its own connection; resolves with the answer, or rejects when the connection is cut. */
function slowGet(url: string): Promise<{ res: IncomingMessage; body: Buffer }> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ res, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

/** Connects to `port` and reports how that ended: `connected`, or the error code. */
function tryConnect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket: Socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

describe('geofabric start: graceful shutdown', function () {
  this.timeout(90_000);
  let xyz: XyzServer;
  let dataDir: string;
  let started: Started | undefined;

  beforeEach(async () => {
    xyz = await startXyzServer();
    dataDir = mkdtempSync(join(tmpdir(), 'geofabric-shutdown-'));
  });
  afterEach(async () => {
    if (started && started.child.exitCode === null) started.child.kill('SIGKILL');
    started = undefined;
    await xyz.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('on SIGTERM refuses new connections, closes idle ones, finishes the request in flight, exits 0', async () => {
    started = await startGeofabric(dataDir, {
      TILE_URL_OSM_BRIGHT: xyz.template('png'),
      SHUTDOWN_DRAIN_SECONDS: '20',
    });
    const { child, url, port, lines } = started;

    // An idle keep-alive connection, parked in its agent's pool after one request.
    const agent = new Agent({ keepAlive: true });
    const idleClosed = new Promise<void>((resolve, reject) => {
      get(`${url}/health`, { agent }, (res) => res.resume())
        .on('socket', (socket: Socket) => socket.once('close', () => resolve()))
        .on('error', reject);
    });

    xyz.delayMs = 2_000;
    const inFlight = slowGet(url + TILE);
    await waitFor('the upstream request', () => (xyz.count('/png') > 0 ? true : null));

    const signalledAt = Date.now();
    child.kill('SIGTERM');
    await waitFor('the drain', () => {
      if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${started!.stderr()}`);
      return lines.find((l) => l.msg === 'shutting down: draining in-flight requests');
    }).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}; log: ${JSON.stringify(lines.map((l) => l.msg))}`);
    });
    assert.equal(await tryConnect(port), 'ECONNREFUSED', 'a new connection after SIGTERM is refused');
    await idleClosed;
    assert.ok(Date.now() - signalledAt < 1_500, 'the idle keep-alive connection closed at once');
    assert.equal(child.exitCode, null, 'still draining while the request runs');

    const { res, body } = await inFlight;
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['x-svc-cache'], 'MISS');
    assert.equal(res.headers.connection, 'close');
    assert.deepEqual(body, await xyz.bytesAt(xyz.requests[0]!.path));

    const [code] = (await once(child, 'exit')) as [number | null];
    assert.equal(code, 0, started.stderr());
    agent.destroy();
    const served = lines.find((l) => l.msg === 'request' && l.route === '/v1/tiles/:h3_cell/:zoom/:file');
    assert.equal(served?.status, 200);
    assert.ok(lines.some((l) => l.msg === 'in-flight requests drained'));
  });

  it("writes the chat completions' worker outcomes counted in memory before it exits on SIGTERM", async () => {
    const runtime = await startFakeRuntime('shutdown', () => ({ content: 'A park.' }));
    try {
      started = await startGeofabric(dataDir, {
        WORKER_RUNTIME_URL: runtime.url,
        WORKER_MODELS: 'tinyllama',
        API_KEYS: 'sk-shutdown',
      });
      const { child, url } = started;
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: 'Bearer sk-shutdown', 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'tinyllama', messages: [{ role: 'user', content: 'one park in Rome' }] }),
        });
        assert.equal(res.status, 200, await res.text());
      }
      child.kill('SIGTERM');
      const [code] = (await once(child, 'exit')) as [number | null];
      assert.equal(code, 0, started.stderr());
      const db = openSqlite(join(dataDir, 'geofabric.db'));
      try {
        const workers = await createSqliteWorkerRegistry(db).list();
        assert.deepEqual(
          workers.map((w) => w.jobs_completed),
          [3],
        );
      } finally {
        db.close();
      }
    } finally {
      await runtime.close();
    }
  });

  it('cuts a request still running when SHUTDOWN_DRAIN_SECONDS is up, and still exits 0', async () => {
    started = await startGeofabric(dataDir, {
      TILE_URL_OSM_BRIGHT: xyz.template('png'),
      TILE_TIMEOUT_MS: '30000',
      SHUTDOWN_DRAIN_SECONDS: '1',
    });
    const { child, url, lines } = started;
    xyz.delayMs = 20_000;
    const inFlight = slowGet(url + TILE);
    await waitFor('the upstream request', () => (xyz.count('/png') > 0 ? true : null));

    const signalledAt = Date.now();
    child.kill('SIGTERM');
    await assert.rejects(inFlight, /socket hang up|ECONNRESET/);
    const [code] = (await once(child, 'exit')) as [number | null];
    assert.equal(code, 0, started.stderr());
    assert.ok(Date.now() - signalledAt < 10_000, 'the drain is bounded');
    assert.ok(lines.some((l) => l.msg === 'drain time is up: closing the connections still open'));
  });
});
