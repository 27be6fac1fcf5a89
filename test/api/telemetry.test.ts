/**
 * IoT telemetry and sensor fusion over HTTP (docs/protocol.md §2.10): signed batches through the gates, per-reading
 * refusals, idempotent records, the GeoJSON listing, and a compute job sensor_fusion → inference on the embedded
 * runner whose numbers are the hand-computed ones of test/core/sensor-fusion.test.ts.
 */
import assert from 'node:assert/strict';
import { cellToChildren, gridDisk } from 'h3-js';
import { DEFAULT_EPOCH_GENESIS_MS } from '../../core/epoch.js';
import { signRequestBody } from '../../core/gates/signature.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import { checkRecord } from '../../core/proof-record.js';
import { verifyReceipt, type JobReceipt } from '../../core/receipt.js';
import { sealThrough } from '../helpers/proofs.js';
import { startFakeRuntime, type FakeRuntime } from '../helpers/fake-openai-runtime.js';
import { startGateway, type TestResponse } from '../helpers/gateway.js';
import { signJob } from '../helpers/jobs.js';
import { signedReading, type UnsignedReading } from '../helpers/telemetry.js';

type Gateway = Awaited<ReturnType<typeof startGateway>>;

const HOUR = 3_600_000;
const EPOCH = 7000;
const EPOCH_START = DEFAULT_EPOCH_GENESIS_MS + EPOCH * HOUR;
const JOB_CELL = '861e8050fffffff';
/** Resolution-9 device cells inside the job cell. */
const DEVICE_CELLS = cellToChildren(JOB_CELL, 9).sort().slice(0, 8);
const iso = (ms: number) => new Date(ms).toISOString();
const BACKBONE_MODEL = 'llama-3.3-70b-versatile';

interface Ingest {
  device_pk: string;
  accepted_count: number;
  refused_count: number;
  accepted: { index: number; record_id: string; epoch: number; duplicate: boolean }[];
  refused: { index: number; code: string; detail: string }[];
  error?: string;
}

describe('IoT telemetry and sensor fusion (POST/GET /v1/telemetry, sensor_fusion steps)', () => {
  let now = EPOCH_START + 30 * 60_000;
  const gateways: Gateway[] = [];
  const runtimes: FakeRuntime[] = [];
  afterEach(async () => {
    for (const gw of gateways.splice(0)) await gw.close();
    for (const rt of runtimes.splice(0)) await rt.close();
  });
  beforeEach(() => {
    now = EPOCH_START + 30 * 60_000;
  });

  async function gateway(options: Parameters<typeof startGateway>[0] = {}) {
    const gw = await startGateway({ clock: () => now, ...options });
    gateways.push(gw);
    return gw;
  }

  const reading = (quantity: string, value: number, unit: string, at: number) => ({
    quantity,
    value,
    unit,
    observed_at: iso(at),
  });
  const pm = (value: number, minute: number) => reading('pm2_5', value, 'ug/m3', EPOCH_START + minute * 60_000);

  /** A batch signed by `device`; each reading without a signature of its own is signed by the device too. */
  function batch(device: KeyPair, cell: string, readings: unknown[], extra: Record<string, unknown> = {}) {
    const each = readings.map((r) =>
      typeof r === 'object' && r !== null && !('signature' in r)
        ? signedReading(device, cell, r as UnsignedReading)
        : r,
    );
    const signed = signRequestBody(device.secretKey, {
      h3_cell: cell,
      readings: each,
      created_at: iso(now),
      ...extra,
    });
    return { body: signed.body as Record<string, unknown>, headers: { 'x-idn-signature': signed.signature } };
  }
  const send = (gw: Gateway, signed: ReturnType<typeof batch>) => gw.post('/v1/telemetry', signed.body, signed.headers);
  const ingest = (res: TestResponse) => res.body as Ingest;

  it('stores each accepted reading as a signed iot/telemetry record addressed by cell and epoch of observed_at', async () => {
    const gw = await gateway();
    const device = generateKeyPair();
    const signed = batch(device, DEVICE_CELLS[0]!, [
      pm(12.5, 10),
      reading('air_temperature', 21.5, 'Cel', EPOCH_START + 11 * 60_000),
    ]);
    const res = await send(gw, signed);
    assert.equal(res.status, 200, res.text);
    const body = ingest(res);
    assert.equal(body.device_pk, device.publicKey);
    assert.equal(body.accepted_count, 2);
    assert.deepEqual(body.refused, []);
    for (const accepted of body.accepted) {
      assert.equal(accepted.epoch, EPOCH);
      assert.equal(accepted.duplicate, false);
      const record = await gw.proofs.getRecord(accepted.record_id);
      assert.ok(record && checkRecord(record).ok);
      assert.equal(record.collection_type, 'telemetry');
      assert.equal(record.payload_type, 'iot/telemetry');
      assert.deepEqual(record.address, { h3_cell: DEVICE_CELLS[0], epoch: EPOCH, pk: gw.node.publicKey });
      const payload = record.payload as Record<string, unknown>;
      assert.equal(payload.device_pk, device.publicKey);
      // The device's own signature over the reading travels with it (payload version 2), so anyone can check it
      // from the record alone; the device acts as its own principal (no delegation certificate).
      const sent = (signed.body.readings as { signature: string }[])[body.accepted.indexOf(accepted)]!;
      assert.equal(payload.device_signature, sent.signature);
      assert.equal(payload.principal_pk, device.publicKey);
      assert.equal(payload.batch, undefined);
    }
  });

  it('stores the same reading once, however often it is sent', async () => {
    const gw = await gateway();
    const device = generateKeyPair();
    const first = ingest(await send(gw, batch(device, DEVICE_CELLS[0]!, [pm(12.5, 10)])));
    now += 1000; // a new created_at: a new signature, the same reading
    const again = await send(gw, batch(device, DEVICE_CELLS[0]!, [pm(12.5, 10), pm(12.5, 10)]));
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(
      ingest(again).accepted.map((a) => [a.record_id, a.duplicate]),
      [
        [first.accepted[0]!.record_id, true],
        [first.accepted[0]!.record_id, true],
      ],
    );
    const stored = await gw.proofs.queryRecords({ cell: JOB_CELL, collection: 'telemetry', limit: 10 });
    assert.equal(stored.records.length, 1);
    // Another value for the same instant is a conflict: the stored reading stands.
    const changed = await send(gw, batch(device, DEVICE_CELLS[0]!, [pm(99, 10)]));
    assert.equal(changed.status, 422, changed.text);
    assert.equal(ingest(changed).refused[0]!.code, 'record_conflict');
  });

  it('accepts part of a batch: 207 with a code for each refused reading; 422 when none is accepted', async () => {
    const gw = await gateway();
    const device = generateKeyPair();
    const res = await send(
      gw,
      batch(device, DEVICE_CELLS[1]!, [
        pm(12, 1),
        reading('ozone', 40, 'ug/m3', EPOCH_START),
        reading('air_temperature', 70, 'degF', EPOCH_START),
        reading('relative_humidity', 120, '%', EPOCH_START),
        pm(12, 30 + 5 + 1), // 6 minutes after the server clock
        pm(12, -61), // two epochs back
        reading('water_level', 2.4, 'm', EPOCH_START + 60_000),
      ]),
    );
    assert.equal(res.status, 207, res.text);
    const body = ingest(res);
    assert.deepEqual(
      body.accepted.map((a) => a.index),
      [0, 6],
    );
    assert.deepEqual(
      body.refused.map((r) => [r.index, r.code]),
      [
        [1, 'unknown_quantity'],
        [2, 'unit_mismatch'],
        [3, 'value_out_of_range'],
        [4, 'reading_in_future'],
        [5, 'reading_too_old'],
      ],
    );
    const none = await send(gw, batch(device, DEVICE_CELLS[1]!, [reading('soil_moisture', 140, '%', EPOCH_START)]));
    assert.equal(none.status, 422, none.text);
    assert.equal(ingest(none).error, 'readings_refused');
    assert.equal(ingest(none).refused[0]!.code, 'value_out_of_range');
  });

  it('refuses a reading of an epoch this node has moved past (older than the store accepts)', async () => {
    const gw = await gateway();
    const device = generateKeyPair();
    now = EPOCH_START + HOUR + 60_000; // epoch 7001
    assert.equal((await send(gw, batch(device, DEVICE_CELLS[0]!, [pm(10, 61)]))).status, 200);
    // The writer is now in epoch 7001: epoch 7000 can no longer be written.
    const late = await send(gw, batch(device, DEVICE_CELLS[0]!, [pm(10, 59)]));
    assert.equal(late.status, 422, late.text);
    assert.equal(ingest(late).refused[0]!.code, 'reading_too_old');
  });

  it('goes through the gates: unsigned, wrongly signed, tampered, stale, bad cell, oversized batch', async () => {
    const gw = await gateway();
    const device = generateKeyPair();
    const other = generateKeyPair();
    const good = batch(device, DEVICE_CELLS[0]!, [pm(10, 1)]);
    const codeOf = (res: TestResponse) => [res.status, (res.body as { error: string }).error];
    assert.deepEqual(codeOf(await gw.post('/v1/telemetry', good.body)), [401, 'signature_required']);
    // Signed by another key than the device key it names.
    const forged = batch(other, DEVICE_CELLS[0]!, [pm(10, 1)]);
    const claimed = { ...forged.body, requester_pk: device.publicKey };
    assert.deepEqual(codeOf(await gw.post('/v1/telemetry', claimed, forged.headers)), [401, 'invalid_signature']);
    // A value changed after signing.
    const tampered = { ...good.body, readings: [signedReading(device, DEVICE_CELLS[0]!, pm(99, 1))] };
    assert.deepEqual(codeOf(await gw.post('/v1/telemetry', tampered, good.headers)), [401, 'invalid_signature']);
    now += 10 * 60_000;
    assert.deepEqual(codeOf(await send(gw, good)), [401, 'stale_request']);
    assert.deepEqual(codeOf(await send(gw, batch(device, 'nope', [pm(10, 1)]))), [400, 'invalid_cell']);
    const many = Array.from({ length: 101 }, (_, i) => pm(10, i % 30));
    assert.deepEqual(codeOf(await send(gw, batch(device, DEVICE_CELLS[0]!, many))), [400, 'invalid_request']);
    const stored = await gw.proofs.queryRecords({ cell: JOB_CELL, collection: 'telemetry', limit: 10 });
    assert.equal(stored.records.length, 0, 'nothing refused at the gates is stored');
  });

  it('bounds the readings a device may have accepted per hour', async () => {
    const gw = await gateway({ telemetryReadingsPerHour: 3 });
    const device = generateKeyPair();
    const res = await send(
      gw,
      batch(
        device,
        DEVICE_CELLS[0]!,
        [1, 2, 3, 4, 5].map((m) => pm(10, m)),
      ),
    );
    assert.equal(res.status, 207, res.text);
    assert.deepEqual(
      ingest(res).refused.map((r) => [r.index, r.code]),
      [
        [3, 'rate_limit'],
        [4, 'rate_limit'],
      ],
    );
  });

  it('spends nothing of the hourly budget on readings already stored: a replayed batch cannot lock a device out', async () => {
    const gw = await gateway({ telemetryReadingsPerHour: 3 });
    const device = generateKeyPair();
    // The device's batch, as anyone can rebuild it from GET /v1/telemetry?proof=1 and replay it.
    const genuine = batch(device, DEVICE_CELLS[0]!, [pm(10, 1), pm(11, 2)]);
    assert.equal((await send(gw, genuine)).status, 200);
    for (let i = 0; i < 5; i++) {
      const replay = await send(gw, genuine);
      assert.equal(replay.status, 200, replay.text);
      assert.deepEqual(
        ingest(replay).accepted.map((a) => a.duplicate),
        [true, true],
      );
    }
    // Its next genuine reading is still within its budget (2 of 3 spent), the one after that is not.
    now += 1000;
    const next = await send(gw, batch(device, DEVICE_CELLS[0]!, [pm(12, 3), pm(12, 3), pm(13, 4)]));
    assert.equal(next.status, 207, next.text);
    assert.deepEqual(
      ingest(next).accepted.map((a) => [a.index, a.duplicate]),
      [
        [0, false],
        [1, true],
      ],
    );
    assert.deepEqual(
      ingest(next).refused.map((r) => [r.index, r.code]),
      [[2, 'rate_limit']],
    );
  });

  it("refuses a reading whose signature is not its device's over the reading statement (invalid_signature)", async () => {
    const gw = await gateway();
    const device = generateKeyPair();
    const other = generateKeyPair();
    const cell = DEVICE_CELLS[0]!;
    const good = signedReading(device, cell, pm(10, 1));
    const res = await send(
      gw,
      batch(device, cell, [
        good,
        { ...signedReading(device, cell, pm(10, 2)), value: 999 }, // a value changed after the device signed it
        signedReading(other, cell, pm(10, 3)), // signed by another key
        signedReading(device, DEVICE_CELLS[1]!, pm(10, 4)), // signed for another cell
      ]),
    );
    assert.equal(res.status, 207, res.text);
    assert.deepEqual(
      ingest(res).refused.map((r) => [r.index, r.code]),
      [
        [1, 'invalid_signature'],
        [2, 'invalid_signature'],
        [3, 'invalid_signature'],
      ],
    );
    const { signature: _, ...unsigned } = good;
    const bare = signRequestBody(device.secretKey, { h3_cell: cell, readings: [unsigned], created_at: iso(now) });
    const missing = await gw.post('/v1/telemetry', bare.body, { 'x-idn-signature': bare.signature });
    assert.equal(missing.status, 400, missing.text);
    assert.equal((missing.body as { error: string }).error, 'invalid_request');
  });

  it('lists readings as a GeoJSON FeatureCollection with SensorThings names, filtered by quantity and time', async () => {
    const gw = await gateway();
    const device = generateKeyPair();
    await send(
      gw,
      batch(device, DEVICE_CELLS[2]!, [pm(12.5, 10), pm(13.5, 20), reading('no2', 40, 'ug/m3', EPOCH_START + 60_000)]),
    );
    const res = await gw.get(`/v1/telemetry?cell=${JOB_CELL}&quantity=pm2_5&from=${iso(EPOCH_START + 15 * 60_000)}`);
    assert.equal(res.status, 200, res.text);
    assert.match(res.headers.get('content-type') ?? '', /application\/geo\+json/);
    const fc = res.body as {
      type: string;
      features: {
        type: string;
        geometry: { type: string; coordinates: number[] };
        properties: Record<string, unknown>;
      }[];
      next_cursor: string | null;
    };
    assert.equal(fc.type, 'FeatureCollection');
    assert.equal(fc.features.length, 1);
    const [f] = fc.features;
    assert.equal(f!.geometry.type, 'Point');
    assert.equal(f!.properties.result, 13.5);
    assert.equal(f!.properties.phenomenonTime, iso(EPOCH_START + 20 * 60_000));
    assert.deepEqual(f!.properties.unitOfMeasurement, {
      name: 'ug/m3',
      symbol: 'µg/m³',
      definition: 'http://unitsofmeasure.org/ucum',
    });
    assert.equal((f!.properties.observedProperty as { name: string }).name, 'pm2_5');
    assert.equal(f!.properties.device_pk, device.publicKey);
    assert.equal(f!.properties.h3_cell, DEVICE_CELLS[2]);
    const all = (await gw.get(`/v1/telemetry?cell=${JOB_CELL}&proof=1`)).body as typeof fc;
    assert.equal(all.features.length, 3);
    assert.ok(all.features.every((feature) => checkRecord(feature.properties.record).ok));
    const err = async (path: string) => {
      const r = await gw.get(path);
      return [r.status, (r.body as { error: string }).error];
    };
    assert.deepEqual(await err('/v1/telemetry'), [400, 'cell_required']);
    assert.deepEqual(await err(`/v1/telemetry?cell=${JOB_CELL}&quantity=ozone`), [400, 'unknown_quantity']);
    assert.deepEqual(await err(`/v1/telemetry?cell=${JOB_CELL}&from=soon`), [400, 'invalid_date']);
    // Before the epoch genesis there are no readings: a window there is empty, one starting there runs from it.
    const count = async (query: string) => (await gw.get(`/v1/telemetry?cell=${JOB_CELL}&${query}`)).body as typeof fc;
    assert.equal((await count('to=1970-01-01T00:00:00.000Z')).features.length, 0);
    assert.equal((await count('from=1970-01-01&to=1999-12-31')).features.length, 0);
    assert.equal((await count('from=1970-01-01')).features.length, 3);
  });

  describe('sensor_fusion steps (embedded runner)', () => {
    const devices = Object.fromEntries('abcdefg'.split('').map((c) => [c, generateKeyPair()]));

    /** The readings of test/core/sensor-fusion.test.ts, sent by six devices in epoch 7000. */
    async function seed(gw: Gateway) {
      const sends: [string, number[]][] = [
        ['a', [10]],
        ['b', [12]],
        ['c', [11, 13, 14, 30, 9]],
        ['d', [14]],
        ['e', [15]],
        ['f', [80]],
      ];
      for (const [i, [name, values]] of sends.entries()) {
        const res = await send(
          gw,
          batch(
            devices[name]!,
            DEVICE_CELLS[i]!,
            values.map((v, k) => pm(v, 5 + k)),
          ),
        );
        assert.equal(res.status, 200, res.text);
      }
      // Device g's batch is signed by another key: refused at gate 1, never counted.
      const forged = batch(generateKeyPair(), DEVICE_CELLS[6]!, [pm(13.5, 7)]);
      const res = await gw.post(
        '/v1/telemetry',
        { ...forged.body, requester_pk: devices.g!.publicKey },
        forged.headers,
      );
      assert.equal(res.status, 401);
      now = EPOCH_START + HOUR + 60_000; // the job runs in the next epoch: 7000 is the last closed one
    }

    const fusionJob = (extra: Record<string, unknown> = {}, steps?: unknown[]) => ({
      h3_cell: JOB_CELL,
      steps: steps ?? [
        { id: 'fuse', type: 'sensor_fusion', quantity: 'pm2_5' },
        {
          id: 'explain',
          type: 'inference',
          depends_on: 'fuse',
          model: BACKBONE_MODEL,
          messages: [{ role: 'user', content: 'is the air fine?' }],
        },
      ],
      budget_credits: 0.1,
      ...extra,
    });

    it('runs sensor_fusion → inference: the documented numbers, the inputs named, the output as context', async () => {
      const runtime = await startFakeRuntime(BACKBONE_MODEL, () => ({ content: 'fine' }));
      runtimes.push(runtime);
      const gw = await gateway({ swarm: { backboneUrl: runtime.url } });
      await seed(gw);
      const signed = signJob(generateKeyPair(), fusionJob());
      const res = await gw.post('/v1/compute', signed.body, signed.headers);
      assert.equal(res.status, 200, res.text);
      const job = res.body as {
        steps: { id: string; status: string; output: Record<string, unknown>; cost: number }[];
        settlement: { breakdown: Record<string, number> };
      };
      const [fuse, explain] = job.steps;
      assert.equal(fuse!.status, 'complete');
      const out = fuse!.output as Record<string, unknown> & { rejected: { principal_pk: string }[] };
      assert.equal(out.value, 13.5);
      assert.equal(out.mad, 1.5);
      assert.ok(Math.abs((out.mean as number) - 12.8) < 1e-12);
      assert.ok(Math.abs((out.stderr as number) - Math.sqrt(0.74)) < 1e-12);
      // Every device its own principal (no certificate): one voter per device, the numbers of one vote per device.
      assert.equal(out.voter_count, 5);
      assert.equal(out.device_count, 5);
      assert.equal(out.reading_count, 9);
      assert.equal(out.input_device_count, 6, 'the forged batch of device g is not counted');
      assert.deepEqual(
        out.rejected.map((r) => r.principal_pk),
        [devices.f!.publicKey],
      );
      assert.deepEqual(out.window, {
        from: iso(EPOCH_START),
        to: iso(EPOCH_START + HOUR),
        epoch_from: EPOCH,
        epoch_to: EPOCH,
      });
      assert.equal(out.cell_epochs, 1);
      assert.equal(fuse!.cost, 0.0005);
      assert.equal(job.settlement.breakdown.fuse, 0.0005);
      // Every input is a signed reading of the store, and the Merkle root binds them.
      const ids = out.record_ids as string[];
      assert.equal(ids.length, 10);
      for (const id of ids) assert.ok(checkRecord(await gw.proofs.getRecord(id)).ok);
      assert.match(out.merkle_root as string, /^[0-9a-f]{64}$/);
      // The inference step saw the fused output as a system message.
      assert.equal(explain!.status, 'complete');
      const messages = runtime.chats()[0]!.body.messages as { role: string; content: string }[];
      const context = messages.find(
        (m) => m.role === 'system' && m.content.includes('Output of the job\'s step "fuse"'),
      );
      assert.ok(context && context.content.includes('"value":13.5'), JSON.stringify(messages));
    });

    it("puts the fusion's signed inputs in the job receipt, which recomputes the fusion from them", async () => {
      const runtime = await startFakeRuntime(BACKBONE_MODEL, () => ({ content: 'fine' }));
      runtimes.push(runtime);
      const gw = await gateway({ swarm: { backboneUrl: runtime.url } });
      await seed(gw);
      const signed = signJob(generateKeyPair(), fusionJob());
      const res = await gw.post('/v1/compute', signed.body, signed.headers);
      assert.equal(res.status, 200, res.text);
      const jobId = (res.body as { job_id: string }).job_id;
      await gw.writer.flush();
      await sealThrough(gw.proofs, gw.node, EPOCH + 1);
      const receipt = (await gw.get(`/v1/compute/${jobId}/receipt`)).body as JobReceipt;
      const inputs = receipt.records.filter((r) => r.role === 'input');
      assert.equal(inputs.length, 10);
      assert.ok(inputs.every((r) => r.step_id === 'fuse' && r.seal !== null));
      const verdict = verifyReceipt(receipt, { sealerPk: gw.node.publicKey });
      assert.ok(verdict.ok, JSON.stringify(verdict.checks.filter((c) => !c.ok)));
      assert.match(verdict.checks.find((c) => c.name === 'fusion_inputs')!.detail, /1 fusion step\(s\) recomputed/);
      // An input dropped, or a reading's value changed, is caught.
      const dropped = structuredClone(receipt);
      dropped.records = dropped.records.filter((r) => r.record_id !== inputs[0]!.record_id);
      assert.equal(verifyReceipt(dropped).failedCheck, 'fusion_inputs');
      const forged = structuredClone(receipt);
      const input = forged.records.find((r) => r.role === 'input')!;
      (input.record!.payload as { value: number }).value = 50;
      assert.equal(verifyReceipt(forged).failedCheck, 'fusion_inputs');
    });

    it('prices by cell-epochs covered: rings 1 over a 3-epoch window is 7 × 3 × 0.0005', async () => {
      const gw = await gateway();
      await seed(gw);
      const step = {
        id: 'fuse',
        type: 'sensor_fusion',
        quantity: 'pm2_5',
        rings: 1,
        context: { date_from: iso(EPOCH_START - 2 * HOUR), date_to: iso(EPOCH_START + HOUR - 1) },
      };
      const signed = signJob(generateKeyPair(), fusionJob({}, [step]));
      const res = await gw.post('/v1/compute', signed.body, signed.headers);
      assert.equal(res.status, 200, res.text);
      const fuse = (res.body as { steps: { output: Record<string, unknown>; cost: number }[] }).steps[0]!;
      assert.equal(fuse.output.cell_epochs, 21);
      assert.deepEqual(fuse.output.cells, gridDisk(JOB_CELL, 1).sort());
      assert.equal(fuse.cost, 0.0105);
      assert.equal(fuse.output.value, 13.5);
    });

    it('fails the step with no_readings when the window holds none, charging nothing for it', async () => {
      const gw = await gateway();
      await seed(gw);
      const step = { id: 'fuse', type: 'sensor_fusion', quantity: 'no2' };
      const signed = signJob(generateKeyPair(), fusionJob({}, [step]));
      const res = await gw.post('/v1/compute', signed.body, signed.headers);
      assert.equal(res.status, 404, res.text);
      const body = res.body as { error: string; step_id: string; job: { steps: { cost: number }[] } };
      assert.equal(body.error, 'no_readings');
      assert.equal(body.step_id, 'fuse');
      assert.equal(body.job.steps[0]!.cost, 0);
    });

    it('refuses at entry a fusion step without quantity, with rings over 2, or an unknown quantity', async () => {
      const gw = await gateway();
      for (const step of [
        { id: 'fuse', type: 'sensor_fusion' },
        { id: 'fuse', type: 'sensor_fusion', quantity: 'pm2_5', rings: 3 },
        { id: 'fuse', type: 'sensor_fusion', quantity: 'ozone' },
      ]) {
        const signed = signJob(generateKeyPair(), fusionJob({}, [step]));
        const res = await gw.post('/v1/compute', signed.body, signed.headers);
        assert.equal(res.status, 400, res.text);
        assert.equal((res.body as { error: string }).error, 'invalid_request');
      }
    });
  });
});
