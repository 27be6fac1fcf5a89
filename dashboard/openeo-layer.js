// @ts-check
/**
 * An openEO XYZ service as a raster layer of the swarm map (docs/protocol.md §16.10): the `url` of
 * `GET /openeo/1.2/services/{service_id}`, pasted by the user, checked and turned into a MapLibre raster source.
 * The URL is a capability (anyone holding it sees the layer, its owner pays for new tiles), so it is kept in
 * this page only, never stored. Tiles are 256 px and served from zoom 12 to 18; MapLibre scales them beyond.
 */

export const OPENEO_LAYER_MIN_ZOOM = 12;
export const OPENEO_LAYER_MAX_ZOOM = 18;

/**
 * The raster source of a pasted XYZ URL, or the reason it is not one: an http(s) URL holding `{z}`, `{x}` and `{y}`.
 * @param {string} text
 * @returns {{ ok: true, source: { type: 'raster', tiles: string[], tileSize: number, minzoom: number, maxzoom: number, attribution: string } } | { ok: false, reason: string }}
 */
export function openEoLayerSource(text) {
  const url = text.trim();
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, reason: 'not a URL' };
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return { ok: false, reason: 'not an http(s) URL' };
  for (const part of ['{z}', '{x}', '{y}']) {
    if (!url.includes(part)) return { ok: false, reason: `the URL has no ${part}: paste the service's \`url\`` };
  }
  return {
    ok: true,
    source: {
      type: 'raster',
      tiles: [url],
      tileSize: 256,
      minzoom: OPENEO_LAYER_MIN_ZOOM,
      maxzoom: OPENEO_LAYER_MAX_ZOOM,
      attribution: 'openEO XYZ service · Sentinel-2 L2A, each tile a proof record',
    },
  };
}
