// @ts-check
/** The Swarm view: `/svc/status` counts, the worker map (swarm-map.js, loaded lazily) and the worker list. */
import { describeError, getJson } from './api.js';
import { badge, byId, card, credits, fill, h, num, plural, shortHex, table, td, time } from './dom.js';
import { OPENEO_LAYER_MIN_ZOOM, openEoLayerSource } from './openeo-layer.js';

/** @typedef {import('./swarm-map.js').Worker & { models: string[], tools: string[], last_seen: string, jobs_completed: number }} Worker */

/** @param {{ config: any }} ctx */
export function createSwarmView(ctx) {
  const error = byId('swarm-error');
  const mapEl = byId('map');
  const mapError = byId('map-error');
  const styleSelect = /** @type {HTMLSelectElement} */ (byId('map-style'));
  /** @type {ReturnType<import('./swarm-map.js').createSwarmMap> | null} */
  let swarmMap = null;
  /** @type {Promise<void> | null} */
  let mapStarting = null;
  /** @type {Worker[]} */
  let workers = [];
  /** @type {string | null} */
  let selectedCell = null;

  for (const style of ctx.config.tiles.styles)
    styleSelect.append(h('option', { value: style, selected: style === ctx.config.tiles.style }, style));
  styleSelect.addEventListener('change', () => swarmMap?.setStyle(styleSelect.value));

  const showMapError = (/** @type {string} */ message) => {
    mapError.hidden = false;
    mapError.textContent = message;
  };

  // An openEO XYZ service over the basemap (openeo-layer.js): its URL is pasted, never stored.
  const layerInput = /** @type {HTMLInputElement} */ (byId('openeo-layer-url'));
  byId('openeo-layer-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const layer = openEoLayerSource(layerInput.value);
    if (!layer.ok) return showMapError(`openEO layer: ${layer.reason}.`);
    mapError.hidden = true;
    void startMap().then(async () => {
      await swarmMap?.setOpenEoLayer(layer);
      if ((swarmMap?.map.getZoom() ?? 0) < OPENEO_LAYER_MIN_ZOOM) {
        showMapError(`openEO layer added: its tiles show from zoom ${OPENEO_LAYER_MIN_ZOOM}; zoom in on its area.`);
      }
    });
  });
  byId('openeo-layer-clear').addEventListener('click', () => {
    layerInput.value = '';
    void swarmMap?.setOpenEoLayer(null);
  });

  /** The map is created once its panel is visible (MapLibre sizes its canvas from the container). */
  function startMap() {
    mapStarting ??= import('./swarm-map.js')
      .then((module) => {
        swarmMap = module.createSwarmMap(mapEl, {
          style: styleSelect.value,
          maxZoom: ctx.config.tiles.max_zoom,
          onCellClick: (cell) => selectCell(cell),
        });
        // Without a listener MapLibre logs errors to the console; here they are shown beside the map.
        swarmMap.map.on('error', (event) => showMapError(`Map: ${event.error?.message ?? 'an error occurred'}`));
        return swarmMap.setWorkers(workers.filter((w) => w.online));
      })
      .catch((/** @type {unknown} */ e) => {
        mapEl.setAttribute('data-state', 'failed');
        showMapError(
          `The map could not start: ${e instanceof Error ? e.message : String(e)}. The list beside it is complete.`,
        );
      });
    return mapStarting;
  }

  /** @param {string} cell */
  function selectCell(cell) {
    selectedCell = selectedCell === cell ? null : cell;
    renderList();
    if (selectedCell) swarmMap?.focus(selectedCell);
  }

  function renderList() {
    const shown = selectedCell ? workers.filter((w) => w.h3_cell === selectedCell) : workers;
    const rows = shown.map((w) =>
      h(
        'tr',
        { 'data-pk': w.pk, 'data-cell': w.h3_cell, class: w.h3_cell === selectedCell ? 'selected' : null },
        td(shortHex(w.pk)),
        td(
          h(
            'button',
            { type: 'button', class: 'link', title: 'Show this cell on the map', onclick: () => selectCell(w.h3_cell) },
            h('code', {}, w.h3_cell),
          ),
        ),
        h(
          'td',
          { class: 'nowrap' },
          h('span', { class: `tier-dot tier-${w.hardware_tier}`, 'aria-hidden': 'true' }),
          `${w.hardware_tier}`,
          w.relay ? ' · relay' : '',
        ),
        td(w.trust_tier, h('br', {}), h('small', { class: 'note' }, plural(w.jobs_completed, 'job'))),
        td(w.online ? badge('online', 'ok') : badge('offline', 'muted')),
        td(w.models.join(', ') || '—'),
        td(time(w.last_seen)),
      ),
    );
    const list = byId('worker-list');
    fill(
      list,
      table({
        id: 'workers-table',
        caption: selectedCell ? `Workers in cell ${selectedCell}` : `Workers (${workers.length} registered)`,
        columns: ['Worker', 'Cell', 'Tier', 'Trust', 'State', 'Models', 'Last seen'],
        rows,
        empty: 'No worker has registered yet. Workers join with `geofabric worker`.',
      }),
      selectedCell
        ? h(
            'button',
            { type: 'button', class: 'secondary', onclick: () => selectCell(/** @type {string} */ (selectedCell)) },
            'Show all workers',
          )
        : null,
    );
  }

  /** @param {any} status */
  function renderCards(status) {
    const w = status.workers;
    const tiers = w.by_hardware_tier ?? {};
    const backbone = status.backbone;
    fill(
      byId('swarm-cards'),
      card(
        'Workers online',
        num(w.online),
        `${num(w.registered)} registered · ${plural(w.relays_online, 'relay')} online`,
      ),
      card('Tier 1 · CPU', num(tiers['1'] ?? 0), earningsLine(status, '1')),
      card('Tier 2 · gaming GPU', num(tiers['2'] ?? 0), earningsLine(status, '2')),
      card('Tier 3 · professional GPU', num(tiers['3'] ?? 0), earningsLine(status, '3')),
      card('Cells with workers', num(Object.keys(w.by_cell ?? {}).length), 'H3 cells with an online compute worker'),
      card('Jobs, last hour', num(status.jobs_last_hour), `epoch ${num(status.epoch)}`),
      card(
        'Backbone',
        backbone?.configured
          ? backbone.reachable === false
            ? 'unreachable'
            : backbone.reachable
              ? 'reachable'
              : 'unknown'
          : 'not configured',
        backbone?.model ?? '',
      ),
    );
  }

  return {
    async refresh() {
      const [status, list] = await Promise.all([getJson('/svc/status'), getJson('/svc/workers')]);
      const failed = [status, list].find((a) => !a.ok);
      error.hidden = !failed;
      error.textContent = failed ? `Could not read the swarm: ${describeError(failed)}` : '';
      if (status.ok) renderCards(status.body);
      if (list.ok) {
        workers = list.body.workers;
        renderList();
        await startMap();
        await swarmMap?.setWorkers(workers.filter((w) => w.online));
      }
    },
    shown() {
      swarmMap?.map.resize();
    },
  };
}

/** @param {any} status @param {string} tier */
function earningsLine(status, tier) {
  const perDay = status.earnings?.per_day_by_tier?.[tier];
  const reference = status.earnings?.spec_reference?.[tier];
  if (perDay === undefined) return '';
  return `${credits(perDay)} credits/day per worker${reference === undefined ? '' : ` (reference ≈ ${reference})`}`;
}
