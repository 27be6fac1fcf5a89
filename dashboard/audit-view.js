// @ts-check
/**
 * The inference audit (docs/protocol.md §2.6): `/svc/inference/recent` as a table of provider, model, tokens, latency,
 * epoch and job hash per job, filtered in the page by text, model and provider; `/svc/inference/stats` above it.
 */
import { describeError, getJson } from './api.js';
import { badge, byId, card, credits, fill, h, num, shortHex, showError, table, td, time } from './dom.js';

const RECENT_LIMIT = 100;

/** The fields the search box looks in. */
const SEARCHED = [
  'job_id',
  'job_hash',
  'model',
  'requested_model',
  'provider',
  'worker_pk',
  'h3_cell',
  'record_id',
  'step_id',
];

/** @param {{ navigate: (hash: string) => void }} ctx */
export function createAuditView(ctx) {
  const error = byId('audit-error');
  const text = /** @type {HTMLInputElement} */ (byId('audit-text'));
  const model = /** @type {HTMLSelectElement} */ (byId('audit-model'));
  const provider = /** @type {HTMLSelectElement} */ (byId('audit-provider'));
  const count = byId('audit-count');
  /** @type {any[]} */
  let entries = [];
  let loaded = false;

  byId('audit-filters').addEventListener('submit', (event) => event.preventDefault());
  for (const input of [text, model, provider]) input.addEventListener('input', () => render());

  /** Keeps the chosen model while the list of models grows. */
  function syncModels() {
    const models = [...new Set(entries.map((e) => e.model))].sort();
    const known = [...model.options].map((o) => o.value).filter(Boolean);
    if (models.length === known.length && models.every((m, i) => m === known[i])) return;
    const chosen = model.value;
    model.replaceChildren(h('option', { value: '' }, 'All models'), ...models.map((m) => h('option', { value: m }, m)));
    model.value = models.includes(chosen) ? chosen : '';
  }

  function render() {
    const needle = text.value.trim().toLowerCase();
    const shown = entries.filter(
      (e) =>
        (!model.value || e.model === model.value) &&
        (!provider.value || e.provider === provider.value) &&
        (!needle ||
          SEARCHED.some((k) =>
            String(e[k] ?? '')
              .toLowerCase()
              .includes(needle),
          )),
    );
    count.textContent = `Showing ${shown.length} of ${entries.length} inferences`;
    const rows = shown.map((e) =>
      h(
        'tr',
        { 'data-job-id': e.job_id ?? null, 'data-provider': e.provider, 'data-model': e.model },
        td(time(e.at)),
        td(badge(e.provider, e.provider === 'backbone' ? 'info' : 'ok')),
        td(
          h('span', { title: e.requested_model !== e.model ? `asked for ${e.requested_model}` : null }, e.model),
          e.fallback_reason ? h('small', { class: 'note' }, ` (fallback: ${e.fallback_reason})`) : null,
        ),
        td(num(e.tokens_in)),
        td(num(e.tokens_out)),
        td(`${num(e.latency_ms)} ms`, e.cold_start ? h('small', { class: 'note' }, ' cold') : null),
        td(num(e.epoch)),
        td(shortHex(e.job_hash)),
        td(credits(e.cost)),
        td(
          // The job is named to the operator only (its id is a capability).
          e.job_id
            ? h('button', { type: 'button', class: 'link', onclick: () => ctx.navigate(`#jobs/${e.job_id}`) }, 'Job')
            : '—',
          ' · ',
          e.record_id
            ? h(
                'button',
                { type: 'button', class: 'link', onclick: () => ctx.navigate(`#proofs/${e.record_id}`) },
                'Proof',
              )
            : '—',
        ),
      ),
    );
    fill(
      byId('audit-table'),
      table({
        id: 'audit-rows',
        caption: 'Recent inferences, newest first',
        columns: [
          'Time',
          'Provider',
          'Model',
          'Tokens in',
          'Tokens out',
          'Latency',
          'Epoch',
          'Job hash',
          'Credits',
          'Links',
        ],
        rows,
        empty: !loaded
          ? 'Loading…'
          : entries.length === 0
            ? 'No inference has run on this gateway yet.'
            : 'No inference matches the filters.',
      }),
    );
  }

  /** @param {any} stats */
  function renderStats(stats) {
    const t = stats.totals;
    const providers = Object.entries(t.by_provider ?? {}).map(
      ([name, v]) => `${name} ${num(/** @type {any} */ (v).requests)}`,
    );
    fill(
      byId('audit-cards'),
      card('Inferences, 24 h', num(t.requests), providers.join(' · ')),
      card('Tokens in / out', `${num(t.tokens_in)} / ${num(t.tokens_out)}`),
      card(
        'Latency p50 / p95',
        t.latency_ms ? `${num(t.latency_ms.p50)} / ${num(t.latency_ms.p95)} ms` : '—',
        t.latency_ms ? `max ${num(t.latency_ms.max)} ms` : '',
      ),
      card('Credits', credits(t.cost), `${num(t.cold_starts)} cold starts · ${num(t.errors)} errors`),
      card('Models', num(Object.keys(t.by_model ?? {}).length), Object.keys(t.by_model ?? {}).join(', ')),
    );
  }

  return {
    async refresh() {
      const [recent, stats] = await Promise.all([
        getJson(`/svc/inference/recent?limit=${RECENT_LIMIT}`),
        getJson('/svc/inference/stats?hours=24'),
      ]);
      const failed = [recent, stats].find((a) => !a.ok);
      showError(error, failed ? `Could not read the inference audit: ${describeError(failed)}` : '');
      if (stats.ok) renderStats(stats.body);
      if (recent.ok) {
        entries = recent.body.entries;
        loaded = true;
        syncModels();
        render();
      }
    },
  };
}
