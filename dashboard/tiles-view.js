// @ts-check
/** Tile stats: `/v1/tiles/stats?hours` as totals, per style and per hour. */
import { describeError, getJson } from './api.js';
import { byId, bytes, card, credits, fill, h, num, showError, table, td, time } from './dom.js';

export function createTilesView() {
  const error = byId('tiles-error');
  const hours = /** @type {HTMLSelectElement} */ (byId('tiles-hours'));
  hours.addEventListener('change', () => void refresh());
  byId('tiles-filters').addEventListener('submit', (event) => event.preventDefault());

  /** @param {any} counts */
  const cells = (counts) => [
    td(num(counts.hits)),
    td(num(counts.misses)),
    td(num(counts.errors)),
    td(bytes(counts.bytes)),
    td(credits(counts.cost)),
  ];

  /** @param {any} report */
  function render(report) {
    const t = report.totals;
    const served = t.hits + t.misses;
    fill(
      byId('tiles-cards'),
      card('Tiles served', num(served), `since ${new Date(report.since).toLocaleString('en-GB')}`),
      card(
        'Cache hit rate',
        served ? `${Math.round((100 * t.hits) / served)} %` : '—',
        `${num(t.hits)} hits · ${num(t.misses)} misses`,
      ),
      card('Errors', num(t.errors), 'upstream failures'),
      card('Bytes sent', bytes(t.bytes)),
      card('Credits', credits(t.cost), 'hit 0.00001 · miss 0.0001 per tile'),
    );
    /** @type {Record<string, any>} */
    const styles = {};
    for (const bucket of report.buckets) {
      for (const [style, c] of Object.entries(bucket.styles)) {
        const sum = (styles[style] ??= { hits: 0, misses: 0, errors: 0, bytes: 0, cost: 0 });
        for (const k of ['hits', 'misses', 'errors', 'bytes', 'cost']) sum[k] += c[k];
      }
    }
    fill(
      byId('tiles-styles'),
      table({
        id: 'tiles-by-style',
        caption: 'Per style',
        columns: ['Style', 'Hits', 'Misses', 'Errors', 'Bytes', 'Credits'],
        rows: Object.entries(styles).map(([style, c]) => h('tr', { 'data-style': style }, td(style), ...cells(c))),
        empty: 'No styles.',
      }),
    );
    const buckets = [...report.buckets].reverse().filter((b) => b.totals.hits + b.totals.misses + b.totals.errors > 0);
    fill(
      byId('tiles-table'),
      table({
        id: 'tiles-by-hour',
        caption: 'Per hour with traffic, newest first',
        columns: ['Hour', 'Epoch', 'Hits', 'Misses', 'Errors', 'Bytes', 'Credits'],
        rows: buckets.map((b) =>
          h('tr', { 'data-epoch': b.epoch }, td(time(b.start)), td(num(b.epoch)), ...cells(b.totals)),
        ),
        empty: 'No tile was served in this period.',
      }),
    );
  }

  async function refresh() {
    const answer = await getJson(`/v1/tiles/stats?hours=${encodeURIComponent(hours.value)}`);
    showError(error, answer.ok ? '' : `Could not read the tile statistics: ${describeError(answer)}`);
    if (answer.ok) render(answer.body);
  }

  return { refresh };
}
