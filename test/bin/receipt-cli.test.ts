/**
 * `geofabric receipt get|verify` (docs/protocol.md §15): fetches a real job's receipt from a gateway, waits for
 * its seal, verifies it offline, and fails a tampered copy naming the check; one run goes through the real CLI.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPair } from '../../core/identity.js';
import type { JobReceipt } from '../../core/receipt.js';
import { receiptCommand } from '../../bin/receipt-commands.js';
import { TEST_NOW } from '../helpers/imagery-fixtures.js';
import { spawnGeofabric } from '../helpers/geofabric-process.js';
import { runReceiptJob, type ReceiptJob } from '../helpers/receipt-job.js';
import { flip } from '../helpers/receipt-tampers.js';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { log: (l: string) => out.push(l), error: (l: string) => err.push(l) } };
}

describe('geofabric receipt get | verify', function () {
  this.timeout(30_000);
  const dir = mkdtempSync(join(tmpdir(), 'receipt-cli-'));
  let job: ReceiptJob;

  before(async () => {
    job = await runReceiptJob({ requester: generateKeyPair(), nowMs: TEST_NOW + 60_000 });
  });
  after(async () => job.close());

  it('get --wait-sealed asks again until the receipt is sealed, then writes it', async () => {
    const file = join(dir, 'receipt.json');
    const c = capture();
    let polls = 0;
    const code = await receiptCommand(['get', job.jobId, '--url', job.gateway.url, '-o', file, '--wait-sealed', '60'], {
      ...c.io,
      progress: { write: () => true },
      sleep: async () => {
        polls++;
        await job.seal();
      },
    });
    assert.equal(code, 0, c.err.join('\n'));
    assert.equal(polls, 1);
    const receipt = JSON.parse(readFileSync(file, 'utf8')) as JobReceipt;
    assert.equal(receipt.status, 'complete');
    assert.equal(receipt.job_id, job.jobId);
  });

  it('verify: 0 with every check ok; --json gives the verdict; a tampered copy is 1 naming the check', async () => {
    const file = join(dir, 'receipt.json');
    const ok = capture();
    assert.equal(
      await receiptCommand(['verify', file, '--sealer-pk', job.gateway.node.publicKey], ok.io),
      0,
      ok.out.join('\n'),
    );
    assert.equal(ok.out.at(-1), 'valid');
    assert.ok(ok.out.some((l) => /ok\s+inclusion/.test(l)));

    const json = capture();
    assert.equal(await receiptCommand(['verify', file, '--json'], json.io), 0);
    assert.equal((JSON.parse(json.out.join('\n')) as { ok: boolean }).ok, true);

    const receipt = JSON.parse(readFileSync(file, 'utf8')) as JobReceipt;
    receipt.records[0]!.proof!.hashes[0] = flip(receipt.records[0]!.proof!.hashes[0]!);
    const forged = join(dir, 'forged.json');
    writeFileSync(forged, JSON.stringify(receipt));
    const bad = capture();
    assert.equal(await receiptCommand(['verify', forged], bad.io), 1);
    assert.equal(bad.out.at(-1), 'INVALID: inclusion');
  });

  it('get answers 1 with the error for an unknown job, and 2 on bad usage', async () => {
    const c = capture();
    assert.equal(
      await receiptCommand(['get', '00000000-0000-8000-8000-000000000000', '--url', job.gateway.url], c.io),
      1,
    );
    assert.match(c.err.join('\n'), /404 .*job_not_found/);
    assert.equal(await receiptCommand(['verify'], capture().io), 2);
    assert.equal(await receiptCommand(['verify', join(dir, 'receipt.json'), '--sealer-pk', 'XY'], capture().io), 2);
    assert.equal(await receiptCommand(['get'], capture().io), 2);
  });

  it('runs as `geofabric receipt verify` (exit 1 and the failed check for a pending receipt)', async () => {
    const file = join(dir, 'pending.json');
    writeFileSync(file, JSON.stringify(job.pending));
    const cli = spawnGeofabric(['receipt', 'verify', file], {});
    let stdout = '';
    cli.child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const [code] = (await once(cli.child, 'exit')) as [number];
    assert.equal(code, 1, cli.stderr());
    assert.match(stdout, /INVALID: sealed/);
  });
});
