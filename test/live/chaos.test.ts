/**
 * The CI profile of `npm run chaos` (bench/chaos.ts, docs/operations.md "Chaos under load"): a short run with a
 * fixed seed, so each of the four process kinds (gateway, worker, Temporal, FerretDB) is killed once while jobs,
 * chat, MCP calls and telemetry stream in; every invariant must hold afterwards. The run starts its own engines
 * (it kills them), beside the pair the live suites share.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');

describe('npm run chaos, CI profile (live)', function () {
  this.timeout(900_000);

  it('kills each process kind under load and ends with invariant violations: 0', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', resolve(ROOT, 'bench', 'chaos.ts')], {
      cwd: ROOT,
      env: {
        ...process.env,
        CHAOS_SEED: '20261129',
        CHAOS_DURATION_S: '90',
        CHAOS_FAULT_EVERY_S: '10',
        // Every job kind, sensor_fusion over the telemetry posted meanwhile included.
        CHAOS_JOBS: 'inference-cell,inference-backbone,tiles,ndvi,flood,fusion',
        CHAOS_CLIENTS: '2',
        CHAOS_PAUSE_S: '35',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    const lines = out.trim().split('\n');
    assert.equal(lines.at(-1), 'invariant violations: 0', out.slice(-6000));
    assert.equal(code, 0, out.slice(-6000));
    assert.match(out, /faults injected \| \d+: .*kill ferretdb.*/, 'the figures name the faults');
    for (const kind of ['gateway', 'worker', 'temporal', 'ferretdb']) {
      assert.match(out, new RegExp(`FAULT kill -9 ${kind}`), `a ${kind} was killed`);
    }
  });
});
