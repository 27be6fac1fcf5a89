/**
 * What a swarm worker's sensor_fusion takes from the gateway's telemetry page (activities/telemetry/http-source.ts,
 * fusion-step.ts; docs/protocol.md §2.10): only records the configured gateway node key wrote, each proven by its
 * device, and no instant that the page answers with two different records.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cellToChildren } from 'h3-js';
import { runSensorFusion } from '../../activities/telemetry/fusion-step.js';
import { httpTelemetrySource } from '../../activities/telemetry/http-source.js';
import { DEFAULT_EPOCH_GENESIS_MS, EPOCH_MS } from '../../core/epoch.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import type { ProofRecord } from '../../core/proof-types.js';
import { signReading, telemetryRecordId } from '../../core/telemetry.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';

const EPOCH = 7000;
const START = DEFAULT_EPOCH_GENESIS_MS + EPOCH * EPOCH_MS;
const JOB_CELL = '861e8050fffffff';
const CELLS = cellToChildren(JOB_CELL, 9).sort();
const AT = new Date(START + 5 * 60_000).toISOString();

/** `writer`'s telemetry record of one no2 reading of `device` at AT, signed by `signer` (the device by default). */
async function recordOf(writer: KeyPair, device: KeyPair, cell: string, value: number, signer = device) {
  const fields = { device_pk: device.publicKey, h3_cell: cell, quantity: 'no2', value, unit: 'ug/m3', observed_at: AT };
  const store = createSqliteProofStore(openSqlite(':memory:'));
  const [record] = await store.appendRecords(writer, [
    {
      id: telemetryRecordId(device.publicKey, 'no2', AT),
      h3_cell: cell,
      epoch: EPOCH,
      collection_type: 'telemetry',
      payload_type: 'iot/telemetry',
      payload: {
        ...fields,
        device_signature: signReading(signer.secretKey, fields),
        principal_pk: device.publicKey,
      },
      written_at: AT,
    },
  ]);
  return record!;
}

describe('sensor_fusion on a worker: the inputs it takes from the telemetry page', () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.close();
    server = undefined;
  });

  /**
   * A telemetry page that answers `records` for every query, as a gateway (honest or not) might; the first
   * `failing.length` requests get those statuses instead (a gateway restarting, or refusing).
   */
  async function page(records: ProofRecord[], failing: number[] = []): Promise<string> {
    server = createServer((_req, res) => {
      const status = failing.shift();
      if (status !== undefined) {
        res.statusCode = status;
        return res.end(JSON.stringify({ error: status >= 500 ? 'store_unavailable' : 'not_found' }));
      }
      res.setHeader('content-type', 'application/geo+json');
      res.end(JSON.stringify({ features: records.map((record) => ({ properties: { record } })), next_cursor: null }));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  /** A worker's fusion of `no2` over the job cell, reading the page at `url` and trusting `writers`. */
  async function fuseFrom(url: string, writers: string[], jobId: string, outageWaitMs?: number) {
    const source = httpTelemetrySource({
      gatewayUrl: url,
      genesisMs: DEFAULT_EPOCH_GENESIS_MS,
      epochMs: EPOCH_MS,
      writers,
      ...(outageWaitMs === undefined ? {} : { outageWaitMs }),
    });
    const run = await runSensorFusion(
      {
        source,
        genesisMs: DEFAULT_EPOCH_GENESIS_MS,
        epochMs: EPOCH_MS,
        nodePk: generateKeyPair().publicKey,
        trustedWriters: writers,
      },
      { job_id: jobId, step_id: 'fuse', quantity: 'no2', h3_cell: JOB_CELL, rings: 0, job_epoch: EPOCH + 1 },
    );
    return run.output;
  }

  it("takes only the gateway node's records signed by their devices, and drops an instant answered twice", async () => {
    const gateway = generateKeyPair();
    const mallory = generateKeyPair();
    const honest = Array.from({ length: 4 }, () => generateKeyPair());
    const records = await Promise.all(honest.map((d, i) => recordOf(gateway, d, CELLS[i]!, 20 + i)));
    // The gateway's key wrote it, but its device did not sign 999.
    const unsigned = await recordOf(gateway, generateKeyPair(), CELLS[4]!, 999, mallory);
    // Device-signed and valid, but written by another key than the gateway's: the page names mallory as writer.
    const elsewhere = await recordOf(mallory, generateKeyPair(), CELLS[5]!, 999);
    // One device's instant answered with two different records, both written by the gateway's key.
    const twice = generateKeyPair();
    const first = await recordOf(gateway, twice, CELLS[6]!, 21);
    const second = await recordOf(gateway, twice, CELLS[6]!, 999);
    const url = await page([...records, unsigned, elsewhere, first, second, first]);

    const out = (await fuseFrom(url, [gateway.publicKey], 'job-1')) as {
      value: number;
      input_device_count: number;
      record_ids: string[];
    };
    assert.equal(out.input_device_count, 4);
    assert.equal(out.value, 21.5);
    assert.deepEqual(out.record_ids, records.map((r) => r.id).sort());
  });

  it('takes the records of every gateway key it is configured with (GATEWAY_NODE_PK a list), and names them', async () => {
    const [a, b] = [generateKeyPair(), generateKeyPair()];
    const mallory = generateKeyPair();
    const byA = await Promise.all([0, 1].map((i) => recordOf(a, generateKeyPair(), CELLS[i]!, 20 + i)));
    const byB = await Promise.all([2, 3].map((i) => recordOf(b, generateKeyPair(), CELLS[i]!, 20 + i)));
    const elsewhere = await recordOf(mallory, generateKeyPair(), CELLS[5]!, 999);
    const url = await page([...byA, ...byB, elsewhere]);
    const writers = [b.publicKey, a.publicKey];
    const out = (await fuseFrom(url, writers, 'job-2')) as {
      input_device_count: number;
      record_ids: string[];
      trusted_writers: string[];
    };
    assert.equal(out.input_device_count, 4);
    assert.deepEqual(out.record_ids, [...byA, ...byB].map((r) => r.id).sort());
    assert.deepEqual(out.trusted_writers, [a.publicKey, b.publicKey].sort());
  });

  it('waits out a gateway that answers 5xx for a while (restarting), and fails at once on a refusal', async () => {
    const gateway = generateKeyPair();
    const records = await Promise.all([0, 1].map((i) => recordOf(gateway, generateKeyPair(), CELLS[i]!, 20 + i)));
    const url = await page(records, [503, 502]);
    const out = (await fuseFrom(url, [gateway.publicKey], 'job-3')) as { input_device_count: number };
    assert.equal(out.input_device_count, 2);

    server?.close();
    const refusing = await page(records, [404]);
    const started = Date.now();
    await assert.rejects(fuseFrom(refusing, [gateway.publicKey], 'job-4'), /HTTP 404/);
    assert.ok(Date.now() - started < 400, 'a refusal is not waited out');

    server?.close();
    const down = await page(records, [503, 503, 503, 503]);
    await assert.rejects(fuseFrom(down, [gateway.publicKey], 'job-5', 1_000), /HTTP 503/);
  });
});
