// @ts-check
/* global location -- browser globals (the project ESLint config knows Node globals only) */
/**
 * The swarm map: MapLibre GL (vendored, no CDN) over a raster basemap from this gateway's own tile endpoint,
 * with each online worker's H3 cell drawn as a polygon (h3-js cellToBoundary) coloured by hardware tier.
 *
 * The tile endpoint is addressed by H3 cell (`/v1/tiles/{cell}/{z}/{style}.png`, docs/protocol.md §4.1): the tile served is
 * the one holding the cell's centroid. MapLibre asks for z/x/y, so `transformRequest` names, for each tile, the
 * resolution-15 cell at the tile's centre: its centroid lies within a metre of that centre, far inside any tile
 * up to zoom 20, so the gateway answers exactly the tile MapLibre asked for.
 */
import * as maplibregl from './vendor/maplibre-gl.mjs';
import { cellToBoundary, cellToLatLng, latLngToCell } from './vendor/h3-js.mjs';

export const TIER_COLOURS = { 1: '#2b8a3e', 2: '#1971c2', 3: '#c2255c' };
const PLACEHOLDER = /\/v1\/tiles\/xyz\/([a-z-]+)\/(\d+)\/(\d+)\/(\d+)$/;
const TILE_CELL_RESOLUTION = 15;

/** The tile URL of our endpoint for XYZ tile (z, x, y). @param {string} style @param {number} z @param {number} x @param {number} y */
export function tileUrl(style, z, x, y) {
  const n = 2 ** z;
  const lng = ((x + 0.5) / n) * 360 - 180;
  const lat = (Math.atan(Math.sinh(Math.PI * (1 - (2 * (y + 0.5)) / n))) * 180) / Math.PI;
  const cell = latLngToCell(lat, lng, TILE_CELL_RESOLUTION);
  return `${location.origin}/v1/tiles/${cell}/${z}/${style}.png`;
}

/**
 * @typedef {{ pk: string, h3_cell: string, hardware_tier: number, trust_tier: string, online: boolean, relay: boolean }} Worker
 */

/** GeoJSON of the workers' cells: one polygon per cell, its workers' highest tier as the colour. @param {Worker[]} workers */
export function cellFeatures(workers) {
  /** @type {Map<string, Worker[]>} */
  const byCell = new Map();
  for (const w of workers) byCell.set(w.h3_cell, [...(byCell.get(w.h3_cell) ?? []), w]);
  return {
    type: /** @type {const} */ ('FeatureCollection'),
    features: [...byCell].map(([cell, members]) => {
      const ring = cellToBoundary(cell, true);
      return {
        type: /** @type {const} */ ('Feature'),
        properties: {
          cell,
          tier: Math.max(...members.map((m) => m.hardware_tier)),
          workers: members.length,
          online: members.filter((m) => m.online).length,
        },
        geometry: { type: /** @type {const} */ ('Polygon'), coordinates: [[...ring, ring[0]]] },
      };
    }),
  };
}

/** A point per cell, so cells far smaller than a pixel at low zoom still show. @param {ReturnType<typeof cellFeatures>} cells */
function centroidFeatures(cells) {
  return {
    type: /** @type {const} */ ('FeatureCollection'),
    features: cells.features.map((f) => {
      const [lat, lng] = cellToLatLng(f.properties.cell);
      return {
        type: /** @type {const} */ ('Feature'),
        properties: f.properties,
        geometry: { type: /** @type {const} */ ('Point'), coordinates: [lng, lat] },
      };
    }),
  };
}

/**
 * @param {HTMLElement} container
 * @param {{ style: string, maxZoom: number, onCellClick?: (cell: string) => void }} options
 */
export function createSwarmMap(container, options) {
  let style = options.style;
  let fitted = false;
  const map = new maplibregl.Map({
    container,
    center: [12.4964, 41.9028],
    zoom: 4,
    maxZoom: Math.min(options.maxZoom, 19),
    attributionControl: { compact: true },
    transformRequest: (url) => {
      const match = PLACEHOLDER.exec(url);
      if (!match) return { url };
      return { url: tileUrl(match[1] ?? style, Number(match[2]), Number(match[3]), Number(match[4])) };
    },
    style: {
      version: 8,
      sources: {
        basemap: {
          type: 'raster',
          tiles: [`${location.origin}/v1/tiles/xyz/${style}/{z}/{x}/{y}`],
          tileSize: 256,
          maxzoom: Math.min(options.maxZoom, 19),
          attribution: 'Tiles via this gateway (docs/protocol.md §2.4) · © OpenStreetMap contributors',
        },
        cells: { type: 'geojson', data: { type: 'FeatureCollection', features: [] } },
        centroids: { type: 'geojson', data: { type: 'FeatureCollection', features: [] } },
      },
      layers: [
        { id: 'basemap', type: 'raster', source: 'basemap' },
        {
          id: 'cells-fill',
          type: 'fill',
          source: 'cells',
          paint: {
            'fill-color': ['match', ['get', 'tier'], 1, TIER_COLOURS[1], 2, TIER_COLOURS[2], TIER_COLOURS[3]],
            'fill-opacity': ['case', ['>', ['get', 'online'], 0], 0.45, 0.15],
          },
        },
        {
          id: 'cells-line',
          type: 'line',
          source: 'cells',
          paint: {
            'line-color': ['match', ['get', 'tier'], 1, TIER_COLOURS[1], 2, TIER_COLOURS[2], TIER_COLOURS[3]],
            'line-width': 2,
          },
        },
        {
          // Fades out as the cell polygons grow large enough to see.
          id: 'cells-point',
          type: 'circle',
          source: 'centroids',
          maxzoom: 10,
          paint: {
            'circle-color': ['match', ['get', 'tier'], 1, TIER_COLOURS[1], 2, TIER_COLOURS[2], TIER_COLOURS[3]],
            'circle-radius': ['interpolate', ['linear'], ['zoom'], 2, 5, 9, 9],
            'circle-opacity': ['interpolate', ['linear'], ['zoom'], 7, 0.9, 10, 0],
            'circle-stroke-color': '#ffffff',
            'circle-stroke-width': 1.5,
            'circle-stroke-opacity': ['interpolate', ['linear'], ['zoom'], 7, 1, 10, 0],
          },
        },
      ],
    },
  });
  map.addControl(new maplibregl.NavigationControl({ showCompass: false }), 'top-right');
  map.addControl(new maplibregl.ScaleControl({}), 'bottom-left');

  const loaded = new Promise((resolve) => map.once('load', resolve));
  map.on('load', () => container.setAttribute('data-state', 'loaded'));
  /** `data-idle`: the latest workers are drawn and every tile of the view is in (tests and screenshots wait for it). */
  const markIdle = () => {
    container.setAttribute('data-idle', 'false');
    map.once('idle', () => container.setAttribute('data-idle', 'true'));
  };
  for (const layer of ['cells-fill', 'cells-point']) {
    map.on('click', layer, (event) => {
      const cell = event.features?.[0]?.properties?.cell;
      if (typeof cell === 'string') options.onCellClick?.(cell);
    });
    map.on('mouseenter', layer, () => (map.getCanvas().style.cursor = 'pointer'));
    map.on('mouseleave', layer, () => (map.getCanvas().style.cursor = ''));
  }

  return {
    map,
    /** @param {Worker[]} workers */
    async setWorkers(workers) {
      await loaded;
      const data = cellFeatures(workers);
      /** @param {string} id */
      const geojson = (id) =>
        /** @type {import('./vendor/maplibre-gl.mjs').GeoJSONSource | undefined} */ (map.getSource(id));
      void geojson('cells')?.setData(data);
      void geojson('centroids')?.setData(centroidFeatures(data));
      container.setAttribute('data-cells', String(data.features.length));
      if (!fitted && data.features.length > 0) {
        fitted = true;
        const bounds = new maplibregl.LngLatBounds();
        for (const f of data.features)
          for (const [lng, lat] of f.geometry.coordinates[0] ?? []) bounds.extend([lng, lat]);
        map.fitBounds(bounds, { padding: 40, maxZoom: 9, duration: 0 });
      }
      markIdle();
    },
    /** @param {string} cell */
    focus(cell) {
      const ring = cellToBoundary(cell, true);
      const bounds = new maplibregl.LngLatBounds();
      for (const [lng, lat] of ring) bounds.extend([lng, lat]);
      map.fitBounds(bounds, { padding: 80, maxZoom: 10 });
    },
    /**
     * The openEO layer over the basemap, under the cells; null removes it.
     * @param {ReturnType<typeof import('./openeo-layer.js').openEoLayerSource> & { ok: true } | null} layer
     */
    async setOpenEoLayer(layer) {
      await loaded;
      if (map.getLayer('openeo')) map.removeLayer('openeo');
      if (map.getSource('openeo')) map.removeSource('openeo');
      if (layer === null) return;
      map.addSource('openeo', layer.source);
      map.addLayer({ id: 'openeo', type: 'raster', source: 'openeo', paint: { 'raster-opacity': 0.85 } }, 'cells-fill');
      markIdle();
    },
    /** @param {string} next */
    setStyle(next) {
      style = next;
      const source = /** @type {import('./vendor/maplibre-gl.mjs').RasterTileSource | undefined} */ (
        map.getSource('basemap')
      );
      source?.setTiles([`${location.origin}/v1/tiles/xyz/${style}/{z}/{x}/{y}`]);
    },
  };
}
