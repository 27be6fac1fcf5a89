/**
 * Each client against a running gateway (docs/protocol.md §15, docs/guide.md "Clients and receipts"): the
 * TypeScript client (@geofabric/client) and the Python client (geofabric_client, run by MCP_PYTHON) each submit
 * a job, wait for it, fetch its receipt once the epoch is sealed, and — with the gateway stopped — verify it
 * offline, pinned to the node's key. The gateway is `geofabric start` (embedded store, DEMO tiles) with
 * 10-second epochs (EPOCH_SECONDS), so the seal comes in seconds.
 *
 * MCP_PYTHON names a Python with the client installed (.ci/run makes one). Without it the Python half fails in
 * CI and is skipped elsewhere, saying why.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { GeofabricClient, verifyReceipt } from '../../clients/typescript/src/index.js';
import { generateKeyPair } from '../../core/identity.js';
import { runGeofabricCli, spawnGeofabric, type GeofabricProcess } from '../helpers/geofabric-process.js';

const run = promisify(execFile);
const PY_CLIENT = join(import.meta.dirname, 'fixtures', 'receipt_python_client.py');
const python = process.env.MCP_PYTHON;

/** Two dependent steps on the demo tiles: no model runtime, no internet. */
const job = (nonce: string) => ({
  h3_cell: '861e8050fffffff',
  steps: [
    { id: 'map', type: 'tile_render', zoom: 12, style: 'osm-bright' },
    { id: 'closer', type: 'tile_render', depends_on: 'map', zoom: 13, style: 'osm-bright' },
  ],
  nonce,
});

/** This environment without the engines the live suite started for the other suites: embedded store and runner. */
function embeddedEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) {
    if (/^(MONGODB_|CENTRAL_STORE|ORCHESTRATOR|TEMPORAL_|LEDGER|NODE_SECRET|TILE_URL_|WORKER_|BACKBONE_)/.test(name)) {
      delete env[name];
    }
  }
  return env;
}

async function logLine(node: GeofabricProcess, msg: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 600; i++) {
    const line = node.lines.find((l) => l.msg === msg);
    if (line) return line;
    if (node.child.exitCode !== null) throw new Error(`start exited ${node.child.exitCode}: ${node.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no "${msg}": ${node.stderr()}`);
}

describe('clients: submit, sealed receipt, offline verify (live)', function () {
  this.timeout(180_000);
  const dir = mkdtempSync(join(tmpdir(), 'geofabric-clients-live-'));
  let node: GeofabricProcess | undefined;
  let url: string;
  let nodePk: string;
  const tsReceipt = join(dir, 'ts-receipt.json');
  const pyReceipt = join(dir, 'py-receipt.json');
  const cliReceipt = join(dir, 'cli-receipt.json');
  let pythonRan = false;

  const stop = async () => {
    if (node && node.child.exitCode === null) {
      node.child.kill('SIGTERM');
      await new Promise((resolve) => node!.child.once('exit', resolve));
    }
  };

  before(async () => {
    node = spawnGeofabric(['start'], {
      ...embeddedEnv(),
      DEMO: 'true',
      EPOCH_SECONDS: '10',
      DATA_DIR: join(dir, 'data'),
      PORT: '0',
      PERCEPTION_ENABLED: 'false',
      GOVERNANCE_ENABLED: 'false',
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info',
      PREWARM_MODELS: '',
    });
    url = String((await logLine(node, 'geofabric gateway listening')).url);
    nodePk = String((await logLine(node, 'node key')).node_pk);
  });
  after(async () => {
    await stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('TypeScript client: submitJob({ wait }), getReceipt after the seal', async () => {
    const client = new GeofabricClient({ baseUrl: url, secretKey: generateKeyPair().secretKey });
    const done = await client.submitJob(job('ts'), { wait: true });
    assert.equal(done.status, 'complete');
    const receipt = await client.getReceipt(String(done.job_id), { waitSealedMs: 120_000 });
    assert.equal(receipt.status, 'complete', JSON.stringify(receipt.pending));
    writeFileSync(tsReceipt, JSON.stringify(receipt));
  });

  it('Python client: submit_job(wait=True), get_receipt(wait_sealed=…) after the seal', async function () {
    if (!python) {
      if (process.env.CI) throw new Error('MCP_PYTHON is not set: .ci/run installs the Python client and sets it');
      this.skip(); // MCP_PYTHON unset outside CI: a Python with `pip install ./clients/python` is needed
    }
    const file = join(dir, 'job.json');
    writeFileSync(file, JSON.stringify(job('py')));
    const { stdout } = await run(python, [PY_CLIENT, 'flow', url, generateKeyPair().secretKey, file, pyReceipt], {
      timeout: 170_000,
    });
    const answer = JSON.parse(stdout) as { job_status: string; receipt_status: string };
    assert.deepEqual([answer.job_status, answer.receipt_status], ['complete', 'complete']);
    pythonRan = true;
  });

  it('CLI: keygen, job submit --wait, receipt get --wait-sealed', async () => {
    const cli = (args: string[]) => runGeofabricCli(args, { cwd: dir, env: embeddedEnv() });
    assert.equal((await cli(['keygen', '--out', 'alice.json'])).code, 0);
    writeFileSync(join(dir, 'cli-job.json'), JSON.stringify(job('cli')));
    const submitted = await cli(['job', 'submit', 'cli-job.json', '--key', 'alice.json', '--url', url, '--wait']);
    assert.equal(submitted.code, 0, submitted.stderr);
    const jobId = (JSON.parse(submitted.stdout) as { job_id: string }).job_id;
    const got = await cli([
      'receipt',
      'get',
      jobId,
      '--url',
      url,
      '-o',
      cliReceipt,
      '--wait-sealed',
      '--timeout',
      '120',
    ]);
    assert.equal(got.code, 0, got.stderr);
  });

  it('with the gateway stopped, `geofabric receipt verify` passes on the CLI’s receipt', async () => {
    await stop();
    const verified = await runGeofabricCli(['receipt', 'verify', cliReceipt, '--sealer-pk', nodePk], {
      env: embeddedEnv(),
    });
    assert.equal(verified.code, 0, verified.stdout + verified.stderr);
    assert.equal(verified.stdout.trim().split('\n').at(-1), 'valid');
  });

  it('with the gateway stopped, each client verifies its receipt offline; a flipped byte fails naming the check', async function () {
    await stop();
    const receipt = JSON.parse(readFileSync(tsReceipt, 'utf8')) as Record<string, unknown>;
    const verdict = verifyReceipt(receipt, { sealerPk: nodePk });
    assert.equal(verdict.ok, true, JSON.stringify(verdict.checks.filter((c) => !c.ok)));
    const job = receipt.job as { steps: { output: Record<string, unknown> }[] };
    job.steps[1]!.output.zoom = 14;
    assert.equal(verifyReceipt(receipt, { sealerPk: nodePk }).failedCheck, 'step_outputs');

    if (!pythonRan) {
      if (process.env.CI) throw new Error('the Python half did not run');
      this.skip();
    }
    const { stdout } = await run(python!, [PY_CLIENT, 'verify', pyReceipt, nodePk], { timeout: 60_000 });
    const py = JSON.parse(stdout) as { ok: boolean; failed_check: string | null };
    assert.deepEqual(py, { ...py, ok: true, failed_check: null });
    // The TypeScript client agrees on the Python client's receipt, and the other way round.
    assert.equal(verifyReceipt(JSON.parse(readFileSync(pyReceipt, 'utf8')), { sealerPk: nodePk }).ok, true);
    const cross = await run(python!, [PY_CLIENT, 'verify', tsReceipt, nodePk], { timeout: 60_000 });
    assert.equal((JSON.parse(cross.stdout) as { ok: boolean }).ok, true);
  });
});
