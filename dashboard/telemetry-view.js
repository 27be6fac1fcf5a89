// @ts-check
/**
 * Telemetry of a job's cell (docs/protocol.md §2.10), shown in the job's detail: the fused values of the job's
 * `sensor_fusion` steps (value, mean ± stderr, devices kept and rejected) and the cell's latest signed readings
 * from `GET /v1/telemetry`, summarised per quantity.
 */
import { describeError, getJson } from './api.js';
import { fill, h, num, shortHex, table, td, time } from './dom.js';

const READINGS_LIMIT = 200;

/**
 * Readings per quantity: count, devices, latest value and time, median. Pure, so it is tested without a page.
 * @param {any[]} features GeoJSON Features of GET /v1/telemetry
 * @returns {{ quantity: string, unit: string, count: number, devices: number, latest: number, latest_at: string, median: number }[]}
 */
export function summarizeReadings(features) {
  /** @type {Map<string, { unit: string, values: number[], devices: Set<string>, latest: number, latest_at: string }>} */
  const by = new Map();
  for (const f of features) {
    const p = f?.properties;
    if (!p || typeof p.result !== 'number' || typeof p.observedProperty?.name !== 'string') continue;
    const name = p.observedProperty.name;
    let entry = by.get(name);
    if (!entry) {
      entry = {
        unit: p.unitOfMeasurement?.name ?? '',
        values: [],
        devices: new Set(),
        latest: p.result,
        latest_at: '',
      };
      by.set(name, entry);
    }
    entry.values.push(p.result);
    entry.devices.add(p.device_pk);
    if (String(p.phenomenonTime) >= entry.latest_at) {
      entry.latest = p.result;
      entry.latest_at = String(p.phenomenonTime);
    }
  }
  return [...by.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([quantity, e]) => {
      const sorted = [...e.values].sort((a, b) => a - b);
      const mid = sorted.length >> 1;
      const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
      return {
        quantity,
        unit: e.unit,
        count: e.values.length,
        devices: e.devices.size,
        latest: e.latest,
        latest_at: e.latest_at,
        median,
      };
    });
}

/**
 * Fills `el` with the telemetry of `job`'s cell: fused values first (from the job itself), then the readings.
 * @param {HTMLElement} el @param {any} job
 */
export async function showCellTelemetry(el, job) {
  const fusions = (job.steps ?? []).filter((/** @type {any} */ s) => s.type === 'sensor_fusion');
  const fused = fusions.map((/** @type {any} */ s) => {
    const o = s.output ?? {};
    return h(
      'tr',
      { 'data-fusion-step': s.id },
      td(h('code', {}, s.id)),
      td(o.quantity ?? '—'),
      td(s.status === 'complete' ? `${num(o.value, 3)} ${o.unit ?? ''}` : (s.error?.code ?? s.status)),
      td(o.mean === undefined ? '—' : `${num(o.mean, 3)} ± ${o.stderr === null ? '—' : num(o.stderr, 3)}`),
      td(o.device_count === undefined ? '—' : `${num(o.device_count)} (${num(o.reading_count)} readings)`),
      td(
        ...(o.rejected ?? []).map((/** @type {any} */ r) =>
          h('span', { class: 'rejected' }, shortHex(r.device_pk), ` ${num(r.value, 3)} `),
        ),
      ),
      td(o.window ? `${time(o.window.from)} – ${time(o.window.to)}` : '—'),
      td(o.merkle_root ? shortHex(o.merkle_root) : '—'),
    );
  });
  const cell = job.h3_cell;
  fill(el, h('h4', {}, 'Telemetry of cell ', h('code', {}, cell ?? '—')), h('p', {}, 'Loading readings…'));
  const answer = cell
    ? await getJson(`/v1/telemetry?cell=${encodeURIComponent(cell)}&limit=${READINGS_LIMIT}`)
    : { ok: false, status: 0, error: 'no_cell', detail: 'the job has no cell', body: null };
  const summary = answer.ok ? summarizeReadings(answer.body.features ?? []) : [];
  fill(
    el,
    h('h4', {}, 'Telemetry of cell ', h('code', {}, cell ?? '—')),
    fused.length
      ? table({
          id: 'job-fusion',
          caption: 'Fused values (sensor_fusion steps)',
          columns: [
            'Step',
            'Quantity',
            'Value (median)',
            'Mean ± stderr',
            'Devices kept',
            'Rejected',
            'Window',
            'Inputs root',
          ],
          rows: fused,
          empty: '',
        })
      : null,
    answer.ok
      ? table({
          id: 'cell-readings',
          caption: `Signed readings in the cell (first ${READINGS_LIMIT} records)`,
          columns: ['Quantity', 'Readings', 'Devices', 'Median', 'Latest', 'Observed'],
          rows: summary.map((q) =>
            h(
              'tr',
              { 'data-quantity': q.quantity },
              td(q.quantity),
              td(num(q.count)),
              td(num(q.devices)),
              td(`${num(q.median, 3)} ${q.unit}`),
              td(`${num(q.latest, 3)} ${q.unit}`),
              td(time(q.latest_at)),
            ),
          ),
          empty: 'No device has sent readings in this cell (POST /v1/telemetry).',
        })
      : h('p', { class: 'error', role: 'alert' }, `Could not read the telemetry: ${describeError(answer)}`),
  );
}
