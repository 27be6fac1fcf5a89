/**
 * `geofabric proof verify` on custodial seals (docs/protocol.md §12.3): any key can sign a seal naming itself the
 * custodian of a worker's epoch, so a server that lies can serve one. With `--node-pk` only the node's custodial
 * seal verifies; without a pin the seal is accepted (as an unpinned writer is) with a warning naming the custodian.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { proofVerifyCommand } from '../../bin/proof-commands.js';
import { verifyRecordAt, type RecordVerdict } from '../../bin/record-verifier.js';
import { bytesToHex } from '../../core/hex.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import { inclusionProofFromLevels } from '../../core/merkle/inclusion.js';
import { signRecord } from '../../core/proof-record.js';
import { GENESIS_PREV_HASH } from '../../core/proof-types.js';
import { createSealWithLevels } from '../../core/seal.js';

const EPOCH = 6200;
const [worker, node, rogue] = [generateKeyPair(), generateKeyPair(), generateKeyPair()];

/** A proof bundle of the worker's record `id`, its epoch sealed by `custodian` for the worker. */
function custodialBundle(id: string, custodian: KeyPair) {
  const record = signRecord(worker.secretKey, {
    version: 1,
    id,
    address: { h3_cell: '861e8050fffffff', epoch: EPOCH, pk: worker.publicKey },
    collection_type: 'tile',
    payload_type: 'tile/vector',
    payload: { z: 12, id },
    seq: 1,
    written_at: '2026-10-01T12:00:00.000Z',
  });
  const { seal, levels } = createSealWithLevels(custodian.secretKey, {
    writerPk: worker.publicKey,
    epoch: EPOCH,
    records: [record],
    prevSealHash: GENESIS_PREV_HASH,
    sealedAt: '2026-10-02T13:00:00.000Z',
  });
  const hashes = inclusionProofFromLevels(levels, 0).map(bytesToHex);
  return { record, seal, proof: { leaf_index: 0, tree_size: 1, hashes }, verified: true };
}

describe('proof verify: custodial seals', () => {
  let server: Server;
  let url: string;
  const bundles = new Map([
    ['by-node', custodialBundle('by-node', node)],
    ['by-rogue', custodialBundle('by-rogue', rogue)],
  ]);

  before(async () => {
    // A proof server that answers whatever bundle it was given, as a lying or compromised one could.
    server = createServer((req, res) => {
      const bundle = bundles.get(decodeURIComponent((req.url ?? '').replace('/store/proof/', '')));
      res.writeHead(bundle ? 200 : 404, { 'content-type': 'application/json' });
      res.end(JSON.stringify(bundle ?? { error: 'record_not_found' }));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());

  const verify = async (args: string[]) => {
    const out: RecordVerdict[] = [];
    const code = await proofVerifyCommand([...args, '--url', url], (v) => out.push(v as RecordVerdict));
    return { code, verdict: out[0]! };
  };

  it('--node-pk: the node’s custodial seal verifies, another key’s is refused with exit 1', async () => {
    const ok = await verify(['by-node', '--node-pk', node.publicKey]);
    assert.equal(ok.code, 0, ok.verdict.problems.join('; '));
    assert.deepEqual([ok.verdict.seal_kind, ok.verdict.sealed_by], ['custodial', node.publicKey]);

    const refused = await verify(['by-rogue', '--node-pk', node.publicKey]);
    assert.equal(refused.code, 1);
    assert.equal(refused.verdict.verified, false);
    assert.deepEqual(refused.verdict.problems, [`custodial seal by ${rogue.publicKey}, not by node ${node.publicKey}`]);
    // Pinning the worker does not make a custodial seal trusted: the worker did not sign it.
    assert.equal((await verify(['by-node', '--node-pk', worker.publicKey])).code, 1);
  });

  it('without a pin: accepted like an unpinned writer, with a warning that names the custodian', async () => {
    const verdict = await verifyRecordAt(url, 'by-rogue');
    assert.equal(verdict.verified, true);
    assert.deepEqual(verdict.warnings, [
      `custodial seal by ${rogue.publicKey}, not pinned: pass --node-pk to check that it is the node's key`,
    ]);
    const pinned = await verifyRecordAt(url, 'by-node', { nodePk: node.publicKey });
    assert.equal(pinned.warnings, undefined);
  });
});
