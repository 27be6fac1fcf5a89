/**
 * docs/quickstart.md, followed for real: `DEMO=true npm start` as a child process (free ports, a temporary
 * DATA_DIR), then the guide's commands through the installed entry point (`npx geofabric` runs bin/geofabric.js)
 * in a working folder: keygen, the guide's own job.json (read from the document), submit, proof verify --wait.
 * It ends with a verified proof: record, seal and Merkle path checked by the CLI's own verifier.
 *
 * One difference from the guide: EPOCH_SECONDS=10 instead of demo mode's 60, so the wait for the seal is
 * seconds, not a minute; everything else is the guide's path.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import sharp from 'sharp';
import { runGeofabricCli, spawnGeofabric, type GeofabricProcess } from '../helpers/geofabric-process.js';

const ROOT = resolve(import.meta.dirname, '../..');
const GUIDE = readFileSync(join(ROOT, 'docs', 'quickstart.md'), 'utf8');

/** `npx geofabric <args>` from `cwd`: the package's bin entry, run to its end. */
const geofabric = (cwd: string, args: string[]) => runGeofabricCli(args, { cwd, env: cleanEnv() });

/** The environment of a newcomer's shell: none of this machine's service settings. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) {
    if (
      /^(MONGODB_|CENTRAL_STORE|ORCHESTRATOR|TEMPORAL_|LEDGER|NODE_SECRET|NODE_ENV|TILE_URL_|WORKER_|BACKBONE_)/.test(
        name,
      )
    ) {
      delete env[name];
    }
  }
  return env;
}

async function waitForLog(node: GeofabricProcess, msg: RegExp, ms = 60_000): Promise<Record<string, unknown>> {
  const until = Date.now() + ms;
  for (;;) {
    const line = node.lines.find((l) => typeof l.msg === 'string' && msg.test(l.msg));
    if (line) return line;
    if (node.child.exitCode !== null) throw new Error(`start exited ${node.child.exitCode}: ${node.stderr()}`);
    if (Date.now() > until) throw new Error(`no log line ${msg} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('the quickstart (docs/quickstart.md), end to end', function () {
  this.timeout(180_000);
  let work: string;
  let node: GeofabricProcess | undefined;

  before(() => {
    work = mkdtempSync(join(tmpdir(), 'gf-quickstart-'));
  });
  after(async () => {
    if (node && node.child.exitCode === null) {
      node.child.kill('SIGTERM');
      await once(node.child, 'exit');
    }
    rmSync(work, { recursive: true, force: true });
  });

  it('goes from `DEMO=true npm start` to a verified proof with no internet and no model runtime', async () => {
    // Step 2: the node, as `npm start` runs it.
    node = spawnGeofabric(['start'], {
      ...cleanEnv(),
      DEMO: 'true',
      EPOCH_SECONDS: '10',
      DATA_DIR: join(work, 'data-demo'),
      PORT: '0',
      PERCEPTION_PORT: '0',
      GOVERNANCE_PORT: '0',
      GOVERNANCE_HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      PREWARM_MODELS: '',
    });
    const listening = await waitForLog(node, /^geofabric gateway listening$/);
    const url = String(listening.url);
    const dev = await waitForLog(node, /^DEVELOPMENT MODE: tiles are synthetic demo tiles/);
    assert.equal(dev.epoch_seconds, 10);

    // Step 3: a key.
    const keygen = await geofabric(work, ['keygen', '--out', 'alice.json']);
    assert.equal(keygen.code, 0, keygen.stderr);
    assert.match((JSON.parse(keygen.stdout) as { public_key: string }).public_key, /^[0-9a-f]{64}$/);

    // Step 4: the guide's job.json, exactly as its heredoc writes it.
    const heredoc = /cat > job\.json <<'JSON'\n([\s\S]*?)\nJSON\n/.exec(GUIDE);
    assert.ok(heredoc, 'the guide writes job.json with a heredoc');
    writeFileSync(join(work, 'job.json'), `${heredoc[1]}\n`);
    assert.match(
      GUIDE,
      /npx geofabric submit job\.json --key alice\.json --url http:\/\/127\.0\.0\.1:8080 > result\.json/,
    );

    // Step 5: sign and submit.
    const submitted = await geofabric(work, ['submit', 'job.json', '--key', 'alice.json', '--url', url]);
    assert.equal(submitted.code, 0, submitted.stdout + submitted.stderr);
    writeFileSync(join(work, 'result.json'), submitted.stdout);
    const result = JSON.parse(submitted.stdout) as {
      status: string;
      steps: { status: string; record_id: string; output: { image_base64: string; x: number; y: number } }[];
      proof: { record_id: string; job_hash: string };
    };
    assert.equal(result.status, 'complete');
    const [step] = result.steps;
    assert.equal(step?.status, 'complete');
    const tile = await sharp(Buffer.from(step.output.image_base64, 'base64')).metadata();
    assert.deepEqual([tile.format, tile.width, tile.height], ['png', 256, 256]);
    // The tile step's record names the demo upstream, so a demo tile is never taken for a map.
    const tileProof = (await (await fetch(`${url}/store/proof/${encodeURIComponent(step.record_id)}`)).json()) as {
      record: { payload: { upstream_host: string } };
    };
    assert.match(tileProof.record.payload.upstream_host, /^demo-tiles@127\.0\.0\.1:\d+$/);

    // Step 6: the proof, verified by the CLI once its epoch is sealed.
    const verified = await geofabric(work, ['proof', 'verify', result.proof.record_id, '--url', url, '--wait', '60']);
    assert.equal(verified.code, 0, verified.stdout + verified.stderr);
    const verdict = JSON.parse(verified.stdout) as { verified: boolean; problems: string[]; sealed_by?: string };
    assert.match(verdict.sealed_by ?? '', /^[0-9a-f]{64}$/, 'names the key that signed the seal');
    assert.deepEqual(verdict, {
      record_id: result.proof.record_id,
      verified: true,
      problems: [],
      seal_kind: 'writer',
      sealed_by: verdict.sealed_by,
      server_said_verified: true,
    });
    // The guide's second verify: the tile step's own record, same epoch, so sealed by now.
    const tileVerified = await geofabric(work, ['proof', 'verify', step.record_id, '--url', url]);
    assert.equal(tileVerified.code, 0, tileVerified.stdout);

    // Troubleshooting: a job the gateway refuses is exit 1 with the gateway's error printed.
    writeFileSync(join(work, 'bad.json'), '{ "h3_cell": "861e8050fffffff", "steps": [] }');
    const refused = await geofabric(work, ['submit', 'bad.json', '--key', 'alice.json', '--url', url]);
    assert.equal(refused.code, 1);
    assert.equal((JSON.parse(refused.stdout) as { error: string }).error, 'invalid_request');

    // Step 7: Ctrl-C drains and exits 0.
    node.child.kill('SIGINT');
    const [code] = (await once(node.child, 'exit')) as [number];
    assert.equal(code, 0);
  });
});

describe('proof verify --wait (bin/proof-commands.ts)', () => {
  it('is for one record only, in whole seconds', async () => {
    const { proofVerifyCommand } = await import('../../bin/proof-commands.js');
    const url = 'http://127.0.0.1:9';
    for (const argv of [
      ['a', 'b', '--wait', '5', '--url', url],
      ['--all', '--wait', '5', '--url', url],
      ['a', '--wait', '1.5', '--url', url],
      ['a', '--wait', 'soon', '--url', url],
    ]) {
      await assert.rejects(
        proofVerifyCommand(argv, () => undefined),
        /usage: proof verify/,
        argv.join(' '),
      );
    }
  });
});
