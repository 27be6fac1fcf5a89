/**
 * The parameters of the tile endpoints (docs/protocol.md §4.1, §2.4, §8) as pure checks: path and query text in, a typed
 * value or the error code out. The H3 cell itself is checked by gate 2 (path params `h3_cell` / `cell`).
 */
import { fail, pass, type Check } from './check.js';
import { integerIn, integerParam, type QueryValue } from './query-params.js';
import { MAX_ZOOM, MIN_ZOOM, TILE_STYLES, type TileStyle } from './tile-styles.js';

/** Formats a client may ask for; `jpeg` in a path is read as `jpg`. */
export const TILE_FORMATS = ['png', 'jpg', 'webp'] as const;
export type TileFormat = (typeof TILE_FORMATS)[number];

export const TILE_CONTENT_TYPES: Readonly<Record<TileFormat, string>> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  webp: 'image/webp',
};

export function checkZoom(text: unknown): Check<number> {
  const zoom = integerIn(text, MIN_ZOOM, MAX_ZOOM);
  return zoom === null
    ? fail('invalid_zoom', `zoom must be an integer ${MIN_ZOOM}..${MAX_ZOOM}: ${JSON.stringify(text)}`)
    : pass(zoom);
}

export function checkStyle(text: unknown): Check<TileStyle> {
  return (TILE_STYLES as readonly unknown[]).includes(text)
    ? pass(text as TileStyle)
    : fail('invalid_style', `style must be one of ${TILE_STYLES.join(', ')}: ${JSON.stringify(text)}`);
}

export function checkFormat(text: unknown): Check<TileFormat> {
  const format = text === 'jpeg' ? 'jpg' : text;
  return (TILE_FORMATS as readonly unknown[]).includes(format)
    ? pass(format as TileFormat)
    : fail('invalid_format', `format must be one of ${TILE_FORMATS.join(', ')} (or jpeg): ${JSON.stringify(text)}`);
}

/**
 * The last path segment of a tile, `{style}.{format}`. A segment without an extension is a request for
 * a style in no format: `invalid_format`, not a 404, so the client learns what to add.
 */
export function checkTileFile(segment: unknown): Check<{ style: TileStyle; format: TileFormat }> {
  const text = typeof segment === 'string' ? segment : '';
  const dot = text.lastIndexOf('.');
  const style = checkStyle(dot < 0 ? text : text.slice(0, dot));
  if (!style.ok) return style;
  const format = checkFormat(dot < 0 ? '' : text.slice(dot + 1));
  return format.ok ? pass({ style: style.value, format: format.value }) : format;
}

/** `rings` of the grid endpoint: absent → 0. */
export const checkRings = (value: QueryValue, max: number): Check<number> =>
  integerParam(value, 'rings', { min: 0, max, fallback: 0 }, 'invalid_rings');
