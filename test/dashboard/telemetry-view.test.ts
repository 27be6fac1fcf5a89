/**
 * The dashboard's telemetry summary (dashboard/telemetry-view.js) over what GET /v1/telemetry really answers:
 * per quantity, the readings, the devices, the median and the latest value.
 */
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEFAULT_EPOCH_GENESIS_MS } from '../../core/epoch.js';
import { signRequestBody } from '../../core/gates/signature.js';
import { generateKeyPair } from '../../core/identity.js';
import { startGateway } from '../helpers/gateway.js';
import { signedReadings } from '../helpers/telemetry.js';

interface Summary {
  quantity: string;
  unit: string;
  count: number;
  devices: number;
  latest: number;
  latest_at: string;
  median: number;
}
interface TelemetryView {
  summarizeReadings(features: unknown[]): Summary[];
}

const CELL = '891e8050003ffff';
const START = DEFAULT_EPOCH_GENESIS_MS + 7000 * 3_600_000;

describe('dashboard telemetry summary (dashboard/telemetry-view.js)', () => {
  it('summarises the readings of a cell per quantity, from the GeoJSON the gateway answers', async () => {
    const view = (await import(
      pathToFileURL(resolve(import.meta.dirname, '../../dashboard/telemetry-view.js')).href
    )) as TelemetryView;
    const now = START + 30 * 60_000;
    const gw = await startGateway({ clock: () => now });
    try {
      const at = (minute: number) => new Date(START + minute * 60_000).toISOString();
      for (const [values, temperature] of [
        [[10, 20], 21],
        [[14], 23],
      ] as const) {
        const device = generateKeyPair();
        const readings = [
          ...values.map((value, i) => ({ quantity: 'pm10', value, unit: 'ug/m3', observed_at: at(i + 1) })),
          { quantity: 'air_temperature', value: temperature, unit: 'Cel', observed_at: at(temperature - 20) },
        ];
        const signed = signRequestBody(device.secretKey, {
          h3_cell: CELL,
          readings: signedReadings(device, CELL, readings),
          created_at: new Date(now).toISOString(),
        });
        const res = await gw.post('/v1/telemetry', signed.body, { 'x-idn-signature': signed.signature });
        assert.equal(res.status, 200, res.text);
      }
      const listed = await gw.get(`/v1/telemetry?cell=${CELL}`);
      const summary = view.summarizeReadings((listed.body as { features: unknown[] }).features);
      assert.deepEqual(summary, [
        { quantity: 'air_temperature', unit: 'Cel', count: 2, devices: 2, latest: 23, latest_at: at(3), median: 22 },
        { quantity: 'pm10', unit: 'ug/m3', count: 3, devices: 2, latest: 20, latest_at: at(2), median: 14 },
      ]);
    } finally {
      await gw.close();
    }
  });
});
