/**
 * The whole client flow through the real CLI (`node bin/geofabric.js`), against a gateway on this machine:
 * `keygen`, `job submit --wait` (exit codes by outcome), `job get`, `job list`, `receipt get --wait-sealed`
 * (progress while the epoch is not sealed), `receipt verify`; and `receipt verify --anchor` against a local
 * Horizon-compatible server (docs/protocol.md §15).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stellarAddress } from '../../activities/settlement/stellar-keys.js';
import { generateKeyPair } from '../../core/identity.js';
import type { JobReceipt } from '../../core/receipt.js';
import { runGeofabricCli } from '../helpers/geofabric-process.js';
import { runReceiptJob, twoStepJob, type ReceiptJob } from '../helpers/receipt-job.js';
import { certFor } from '../helpers/jobs.js';

const ROOT = resolve(import.meta.dirname, '../..');
const env = process.env;

describe('geofabric job submit | get | list and receipt get --wait-sealed (CLI)', function () {
  this.timeout(90_000);
  const dir = mkdtempSync(join(tmpdir(), 'job-cli-'));
  const keyFile = join(dir, 'key.json');
  let job: ReceiptJob;
  let jobId: string;

  before(async () => {
    job = await runReceiptJob({ requester: generateKeyPair(), nowMs: Date.now() });
    const keygen = await runGeofabricCli(['keygen', '--out', keyFile], { env });
    assert.equal(keygen.code, 0, keygen.stderr);
  });
  after(async () => job.close());

  it('job submit --wait signs, submits and prints the finished job: exit 0', async () => {
    const file = join(dir, 'job.json');
    writeFileSync(file, JSON.stringify(twoStepJob('cli-1')));
    const run = await runGeofabricCli(['job', 'submit', file, '--key', keyFile, '--url', job.gateway.url, '--wait'], {
      env,
    });
    assert.equal(run.code, 0, run.stderr);
    const answer = JSON.parse(run.stdout) as { job_id: string; status: string; steps: unknown[] };
    assert.equal(answer.status, 'complete');
    assert.equal(answer.steps.length, 2);
    jobId = answer.job_id;
  });

  it('job submit --cert sends the delegation certificate (JSON file): the receipt holds the chain', async () => {
    const human = generateKeyPair();
    const agentPk = (JSON.parse(readFileSync(keyFile, 'utf8')) as { public_key: string }).public_key;
    const certFile = join(dir, 'cert.json');
    writeFileSync(certFile, JSON.stringify(certFor(human, agentPk)));
    const file = join(dir, 'job-cert.json');
    writeFileSync(file, JSON.stringify(twoStepJob('cli-cert')));
    const run = await runGeofabricCli(
      ['job', 'submit', file, '--key', keyFile, '--url', job.gateway.url, '--cert', certFile],
      { env },
    );
    assert.equal(run.code, 0, run.stderr);
    const id = (JSON.parse(run.stdout) as { job_id: string }).job_id;
    const receipt = (await job.gateway.get(`/v1/compute/${id}/receipt`)).body as JobReceipt;
    assert.equal((receipt.request.delegation_chain![0] as { principal_pk: string }).principal_pk, human.publicKey);
  });

  it('exit codes: 4 refused by the gateway, 2 gateway unreachable, 2 usage', async () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ ...twoStepJob('cli-bad'), steps: [] }));
    const refused = await runGeofabricCli(['job', 'submit', bad, '--key', keyFile, '--url', job.gateway.url], { env });
    assert.equal(refused.code, 4, refused.stderr);
    assert.match(refused.stderr, /refused \(400\): invalid_request/);

    const down = await runGeofabricCli(
      ['job', 'submit', join(dir, 'job.json'), '--key', keyFile, '--url', 'http://127.0.0.1:9'],
      { env },
    );
    assert.equal(down.code, 2, down.stderr);
    assert.equal((await runGeofabricCli(['job', 'submit', join(dir, 'job.json')], { env })).code, 2);
    assert.equal((await runGeofabricCli(['job', 'get', jobId, '--bogus'], { env })).code, 2);
  });

  it('job get prints the job; an unknown job is refused (4); job list --key lists the signer’s jobs', async () => {
    const got = await runGeofabricCli(['job', 'get', jobId, '--url', job.gateway.url], { env });
    assert.equal(got.code, 0, got.stderr);
    assert.equal((JSON.parse(got.stdout) as { job_id: string }).job_id, jobId);
    const unknown = await runGeofabricCli(
      ['job', 'get', '00000000-0000-8000-8000-000000000000', '--url', job.gateway.url],
      { env },
    );
    assert.equal(unknown.code, 4);
    const listed = await runGeofabricCli(['job', 'list', '--key', keyFile, '--url', job.gateway.url], { env });
    assert.equal(listed.code, 0, listed.stderr);
    const list = JSON.parse(listed.stdout) as { view: string; jobs: { job_id: string }[] };
    assert.equal(list.view, 'requester');
    assert.ok(list.jobs.some((j) => j.job_id === jobId));
  });

  it('receipt get --wait-sealed shows progress until the epoch is sealed, then receipt verify passes', async () => {
    const file = join(dir, 'receipt.json');
    const child = spawn(
      process.execPath,
      [
        join(ROOT, 'bin', 'geofabric.js'),
        'receipt',
        'get',
        jobId,
        '--url',
        job.gateway.url,
        '-o',
        file,
        '--wait-sealed',
      ],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    let sealed = false;
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      // The first progress line: the receipt is pending; seal the epoch now.
      if (!sealed && /polls, pending/.test(stderr)) {
        sealed = true;
        void job.seal();
      }
    });
    const [code] = (await once(child, 'exit')) as [number];
    assert.equal(code, 0, stderr);
    assert.match(stderr, /receipt [0-9a-f-]{36}: 1 polls, pending/);
    assert.match(stderr, /written to/);
    const receipt = JSON.parse(readFileSync(file, 'utf8')) as JobReceipt;
    assert.equal(receipt.status, 'complete');

    const verified = await runGeofabricCli(['receipt', 'verify', file, '--sealer-pk', job.gateway.node.publicKey], {
      env,
    });
    assert.equal(verified.code, 0, verified.stdout);
    assert.match(verified.stdout, /ok\s+delegation_chain/);
    assert.equal(verified.stdout.trim().split('\n').at(-1), 'valid');
  });
});

/** A Horizon-compatible server answering GET /transactions/:hash and /transactions/:hash/operations. */
async function startHorizon(txs: Map<string, { source: string; name: string; value: string }>): Promise<Server> {
  const server = createServer((req, res) => {
    const m = /^\/transactions\/([0-9a-f]{64})(\/operations)?/.exec(req.url ?? '');
    const tx = m ? txs.get(m[1]!) : undefined;
    res.setHeader('content-type', 'application/json');
    if (!m || !tx) {
      res.statusCode = 404;
      res.end(JSON.stringify({ status: 404, title: 'Resource Missing' }));
      return;
    }
    const hash = m[1]!;
    if (m[2]) {
      const op = {
        type: 'manage_data',
        source_account: tx.source,
        transaction_hash: hash,
        name: tx.name,
        value: tx.value,
      };
      res.end(JSON.stringify({ _embedded: { records: [op] } }));
      return;
    }
    res.end(
      JSON.stringify({
        hash,
        ledger: 7,
        successful: true,
        source_account: tx.source,
        memo_type: 'none',
        paging_token: '1',
      }),
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

describe('geofabric receipt verify --anchor (a local Horizon-compatible server)', function () {
  this.timeout(90_000);
  const receipt = JSON.parse(
    readFileSync(join(ROOT, 'test/fixtures/conformance/receipt-valid.json'), 'utf8'),
  ) as JobReceipt;
  const seal = receipt.records[0]!.seal!;
  const anchor = receipt.records[0]!.anchor!;
  const txs = new Map<string, { source: string; name: string; value: string }>();
  const dir = mkdtempSync(join(tmpdir(), 'receipt-anchor-'));
  const file = join(dir, 'receipt.json');
  let horizon: Server;
  let url: string;

  before(async () => {
    writeFileSync(file, JSON.stringify(receipt));
    horizon = await startHorizon(txs);
    url = `http://127.0.0.1:${(horizon.address() as AddressInfo).port}`;
  });
  after(() => horizon.close());

  it('passes when the ledger holds epoch:<n> = the seal root from the sealer; names ledger_anchor otherwise', async () => {
    const entry = { source: stellarAddress(seal.sealer_pk), name: `epoch:${seal.epoch}`, value: '' };
    txs.set(anchor.tx_hash, { ...entry, value: Buffer.from(seal.merkle_root, 'hex').toString('base64') });
    const ok = await runGeofabricCli(['receipt', 'verify', file, '--anchor', '--horizon', url], { env });
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    assert.match(ok.stdout, new RegExp(`ok\\s+ledger_anchor\\s+epoch:${seal.epoch} = ${seal.merkle_root} in ledger 7`));

    // The ledger holds another root under that name: the receipt's anchor is not on the ledger.
    txs.set(anchor.tx_hash, { ...entry, value: Buffer.alloc(32, 1).toString('base64') });
    const wrong = await runGeofabricCli(['receipt', 'verify', file, '--anchor', '--horizon', url, '--json'], { env });
    assert.equal(wrong.code, 1);
    const verdict = JSON.parse(wrong.stdout) as { failedCheck: string; checks: { name: string; detail: string }[] };
    assert.equal(verdict.failedCheck, 'ledger_anchor');
    assert.match(verdict.checks.at(-1)!.detail, /holds a different root/);

    txs.clear();
    const missing = await runGeofabricCli(['receipt', 'verify', file, '--anchor', '--horizon', url], { env });
    assert.equal(missing.code, 1);
    assert.match(missing.stdout, /INVALID: ledger_anchor/);
    // Without --anchor nothing is asked: offline the receipt is valid.
    assert.equal((await runGeofabricCli(['receipt', 'verify', file], { env })).code, 0);
  });
});

describe('geofabric job submit: outcomes the gateway answers (a local fake gateway)', function () {
  this.timeout(90_000);
  const dir = mkdtempSync(join(tmpdir(), 'job-cli-fake-'));
  const jobId = '11111111-2222-8333-8444-555555555555';
  let server: Server;
  let url: string;
  /** What POST /v1/compute answers, and how many GETs answer `running` before the job is done. */
  let mode: 'timeout' | 'failed' = 'timeout';
  let runningPolls = 0;

  const finished = { job_id: jobId, status: 'complete', steps: [] };
  before(async () => {
    server = createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'POST') {
        req.resume();
        if (mode === 'failed') {
          res.statusCode = 502;
          res.end(
            JSON.stringify({
              error: 'step_failed',
              detail: 'step "map" failed',
              job_id: jobId,
              step_id: 'map',
              job: { ...finished, status: 'failed' },
            }),
          );
        } else {
          res.statusCode = 504;
          res.end(JSON.stringify({ error: 'job_timeout', detail: 'still running', job_id: jobId }));
        }
        return;
      }
      if (runningPolls > 0) {
        runningPolls--;
        res.end(JSON.stringify({ job_id: jobId, status: 'running' }));
      } else res.end(JSON.stringify(finished));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    writeFileSync(join(dir, 'job.json'), JSON.stringify(twoStepJob('fake')));
    writeFileSync(join(dir, 'key.json'), JSON.stringify({ secret_key: generateKeyPair().secretKey }));
  });
  after(() => server.close());

  const submit = (...extra: string[]) =>
    runGeofabricCli(['job', 'submit', join(dir, 'job.json'), '--key', join(dir, 'key.json'), '--url', url, ...extra], {
      env,
    });

  it('the gateway stopped waiting: exit 3 without --wait; --wait polls the job (progress) to its end, exit 0', async () => {
    mode = 'timeout';
    const running = await submit();
    assert.equal(running.code, 3, running.stderr);
    assert.match(running.stderr, new RegExp(`job ${jobId} is still running`));

    runningPolls = 2;
    const waited = await submit('--wait');
    assert.equal(waited.code, 0, waited.stderr);
    assert.equal((JSON.parse(waited.stdout) as { status: string }).status, 'complete');
    assert.match(waited.stderr, new RegExp(`job ${jobId}: 1 polls, running\\n`));
    assert.match(waited.stderr, /2 polls, running in [\d.]+ s; complete/);
  });

  it('a job that ran and failed: exit 1, the job printed with its error', async () => {
    mode = 'failed';
    const failed = await submit();
    assert.equal(failed.code, 1, failed.stderr);
    assert.equal((JSON.parse(failed.stdout) as { job: { status: string } }).job.status, 'failed');
    assert.match(failed.stderr, /failed: step_failed/);
  });
});
