/**
 * `perception_fetch_tile` (docs/protocol.md §4.2): the best Sentinel-2 L2A scene over an H3 cell (least cloudy, ties →
 * newest) from the imagery issue's STAC catalog, with its metadata and the URLs of the requested bands.
 *
 * The search is the imagery client's (`createStacClient(...).searchBody`: cell polygon, 30-day window before
 * now, cloud filter, clearest-first sort) and its items are read with the imagery schema and `toScene`. This
 * tool posts the search itself because it needs each item's raw assets (every band, not only the six the
 * imagery API surfaces) and projection properties, which `StacClient.search` does not return.
 *
 * Band names are Sentinel-2 band codes. Catalogs key assets either by common name (Earth Search v1: `red`,
 * `nir08`, `swir16`, `scl` …) or by code (`B04`, `B8A`, `SCL`: Earth Search v0, Planetary Computer); both
 * are looked up. B10 (cirrus) does not exist in L2A products and is refused by the schema.
 */
import { z } from 'zod';
import { computeBandMath, type BandMathResult } from '../../../activities/imagery/band-math.js';
import { ImageDataError, publicReadFailure } from '../../../activities/imagery/cog-reader.js';
import { originSet } from '../../../activities/safe-fetch.js';
import { BAND_MATH_BANDS, MAX_EXPRESSION_LENGTH, parseBandExpression } from '../../../core/band-math.js';
import { DEFAULT_WINDOW_DAYS, resolveWindow, stacInterval } from '../../../activities/imagery/date-window.js';
import { createStacClient, type StacClientConfig } from '../../../activities/imagery/stac-client.js';
import {
  httpLink,
  leastCloudy,
  stacSearchResponseSchema,
  toScene,
  type Scene,
  type StacItem,
} from '../../../activities/imagery/stac-item.js';
import { cellArgument } from '../../shared/structured.js';
import { cellToolCoaz, ToolError, type PerceptionTool } from '../tool-def.js';
import { fetchUpstreamJson } from './upstream-fetch.js';

/** Sentinel-2 L2A band code → Earth Search v1 asset key. */
export const BAND_ASSET_KEYS = {
  B01: 'coastal',
  B02: 'blue',
  B03: 'green',
  B04: 'red',
  B05: 'rededge1',
  B06: 'rededge2',
  B07: 'rededge3',
  B08: 'nir',
  B8A: 'nir08',
  B09: 'nir09',
  B11: 'swir16',
  B12: 'swir22',
  SCL: 'scl',
} as const;
export type BandName = keyof typeof BAND_ASSET_KEYS;
const BAND_NAMES = Object.keys(BAND_ASSET_KEYS) as [BandName, ...BandName[]];

export const DEFAULT_BANDS: readonly BandName[] = ['B02', 'B03', 'B04', 'B08'];
export const DEFAULT_MAX_CLOUD_COVER = 20;
/** The longest search window `days_back` may ask for: a year of scenes. */
export const MAX_DAYS_BACK = 365;
const DAY_MS = 86_400_000;
/** Candidates asked for; the catalog sorts them clearest first, so the best is among them. */
const CANDIDATES = 100;

export const fetchTileInputSchema = {
  h3_cell: cellArgument('the cell the scene must cover'),
  days_back: z
    .number()
    .int()
    .min(1)
    .max(MAX_DAYS_BACK)
    .optional()
    .default(DEFAULT_WINDOW_DAYS)
    .describe(`how many days before now the scene search reaches (1-${MAX_DAYS_BACK}, default ${DEFAULT_WINDOW_DAYS})`)
    .meta({ examples: [DEFAULT_WINDOW_DAYS] }),
  max_cloud_cover: z
    .number()
    .min(0)
    .max(100)
    .optional()
    .default(DEFAULT_MAX_CLOUD_COVER)
    .describe('maximum scene cloud cover in percent, 0-100 (default 20)')
    .meta({ examples: [DEFAULT_MAX_CLOUD_COVER] }),
  bands: z
    .array(z.enum(BAND_NAMES))
    .min(1)
    .max(BAND_NAMES.length)
    .optional()
    .default(() => [...DEFAULT_BANDS])
    .describe(`Sentinel-2 L2A bands among ${BAND_NAMES.join(', ')} (default B02, B03, B04, B08)`)
    .meta({ examples: [[...DEFAULT_BANDS]] }),
  expression: z
    .string()
    .max(MAX_EXPRESSION_LENGTH)
    .superRefine((text, ctx) => {
      const parsed = parseBandExpression(text);
      if (!parsed.ok) ctx.addIssue({ code: 'custom', message: parsed.detail });
    })
    .optional()
    .describe(
      `band math over the scene's pixels in the cell (docs/protocol.md §2.5 band_math): + - * /, parentheses, ` +
        `numbers and the bands ${BAND_MATH_BANDS.join(' ')}; the answer adds its statistics as band_math`,
    )
    .meta({ examples: ['(B08-B04)/(B08+B04)'] }),
};
type FetchTileArgs = z.infer<z.ZodObject<typeof fetchTileInputSchema>>;

export interface FetchTileDeps {
  /**
   * The imagery catalog's configuration (STAC API root, collection, per-request timeout, user agent) and the
   * origins band assets may be read from besides the catalog's (IMAGERY_ASSET_ORIGINS), for `expression`.
   */
  stac: StacClientConfig & { assetOrigins?: readonly string[] | undefined };
}

export interface FetchTileResult {
  h3_cell: string;
  collection: string;
  data_source: string;
  window: { from: string; to: string };
  max_cloud_cover: number;
  /** Scenes matching the cell, window and cloud filter (at most 100 are asked for). */
  scene_count: number;
  scene: {
    id: string;
    datetime: string;
    cloud_cover: number | null;
    platform: string | null;
    mgrs_tile: string | null;
    proj_epsg: number | null;
    processing_baseline: string | null;
    thumbnail: string | null;
  };
  /** Requested band → asset href; bands the scene lacks are in `missing_bands` instead. */
  band_urls: Partial<Record<BandName, string>>;
  missing_bands: BandName[];
  /** With `expression`: its statistics over the scene's pixels in the cell, as the band_math operation gives. */
  band_math?: BandMathResult;
}

/** The asset of `band` under any of the names catalogs use for it. */
export function bandHref(item: StacItem, band: BandName): string | undefined {
  const keys = [BAND_ASSET_KEYS[band], band, band.toLowerCase()];
  for (const key of keys) {
    const href = item.assets[key]?.href;
    if (href) return href;
  }
  return undefined;
}

/** `s2:mgrs_tile` ("33TTG"), or the three `mgrs:` properties of STAC's MGRS extension. */
function mgrsTile(p: Record<string, unknown>): string | null {
  if (typeof p['s2:mgrs_tile'] === 'string') return p['s2:mgrs_tile'];
  const zone = p['mgrs:utm_zone'];
  const band = p['mgrs:latitude_band'];
  const square = p['mgrs:grid_square'];
  return (typeof zone === 'number' || typeof zone === 'string') &&
    typeof band === 'string' &&
    typeof square === 'string'
    ? `${zone}${band}${square}`
    : null;
}

/** `proj:epsg` (projection extension v1), or `proj:code` "EPSG:32633" (v2). */
function projEpsg(p: Record<string, unknown>): number | null {
  if (typeof p['proj:epsg'] === 'number') return p['proj:epsg'];
  const code = typeof p['proj:code'] === 'string' ? /^EPSG:(\d+)$/.exec(p['proj:code']) : null;
  return code ? Number(code[1]) : null;
}

export function createFetchTileTool(deps: FetchTileDeps): PerceptionTool {
  const config = deps.stac;
  const stacUrl = config.stacUrl.replace(/\/+$/, '');
  const client = createStacClient({ ...config, stacUrl });
  const host = new URL(stacUrl).host;
  const name = `the STAC catalog at ${host}`;

  const tool: PerceptionTool<typeof fetchTileInputSchema> = {
    name: 'perception_fetch_tile',
    title: 'Sentinel-2 scene over an H3 cell',
    description:
      'Finds the least cloudy (then newest) Sentinel-2 L2A scene of the last days_back days (default 30) over an H3 cell under a cloud ' +
      'cover limit, and returns its STAC metadata and the URLs of the requested bands (Cloud-Optimized GeoTIFFs); ' +
      'with an expression such as (B08-B04)/(B08+B04), also its statistics over the pixels of the scene in the cell.',
    inputSchema: fetchTileInputSchema,
    outputSchema: {
      h3_cell: z.string(),
      window: z.looseObject({ from: z.string(), to: z.string() }).describe('the searched date window (ISO 8601)'),
      scene_count: z.number().int().describe('scenes matching the cell, window and cloud filter'),
      band_urls: z.record(z.string(), z.string()).describe('requested band → Cloud-Optimized GeoTIFF URL'),
      band_math: z
        .looseObject({ expression: z.string(), mean: z.number().nullable(), validPixels: z.number().int() })
        .optional()
        .describe('with expression: mean, min, max, p10, p50, p90 and pixel counts over the cell'),
    },
    facet: 'perception',
    cellOf: (args) => args.h3_cell,
    coaz: cellToolCoaz({ max_cloud_cover: 'params.max_cloud_cover', bands: 'params.bands' }),
    async run(args: FetchTileArgs, context): Promise<FetchTileResult> {
      const window = resolveWindow(context.now - args.days_back * DAY_MS, undefined, context.now);
      if (!window.ok) throw new ToolError(window.error, window.detail);
      const body = client.searchBody({
        cell: args.h3_cell,
        window: window.value,
        cloud: args.max_cloud_cover,
        limit: CANDIDATES,
        order: 'clearest',
      });
      const answer = await fetchUpstreamJson({
        name,
        url: `${stacUrl}/search`,
        method: 'POST',
        headers: { accept: 'application/geo+json, application/json', 'user-agent': config.userAgent },
        body,
        timeoutMs: config.timeoutMs,
        ...(context.signal ? { signal: context.signal } : {}),
      });
      if (!answer.ok)
        throw new ToolError('upstream_unavailable', `${name} answered HTTP ${answer.status} to POST /search`);
      const parsed = stacSearchResponseSchema.safeParse(answer.json);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const where = issue?.path.map(String).join('.') || 'body';
        throw new ToolError(
          'upstream_unavailable',
          `malformed STAC response from ${name}: ${where}: ${issue?.message}`,
        );
      }
      const items = new Map<string, StacItem>();
      const scenes: Scene[] = [];
      for (const item of parsed.data.features) {
        const scene = toScene(item);
        if (typeof scene === 'string') throw new ToolError('upstream_unavailable', `malformed STAC response: ${scene}`);
        items.set(scene.id, item);
        scenes.push(scene);
      }
      const best = leastCloudy(scenes);
      const interval = stacInterval(window.value);
      if (!best) {
        throw new ToolError(
          'no_scenes',
          `no ${config.collection} scene over ${args.h3_cell} with cloud cover ≤ ${args.max_cloud_cover} % in ${interval}`,
        );
      }
      const item = items.get(best.id)!;
      const bandUrls: Partial<Record<BandName, string>> = {};
      const missing: BandName[] = [];
      for (const band of new Set(args.bands)) {
        // A link the client may follow: http(s) only; another scheme counts as missing.
        const href = httpLink(bandHref(item, band));
        if (href) bandUrls[band] = href;
        else missing.push(band);
      }
      const [from, to] = interval.split('/') as [string, string];
      const bandMath =
        args.expression === undefined ? undefined : await expressionOver(best, args.h3_cell, args.expression);
      return {
        h3_cell: args.h3_cell,
        collection: config.collection,
        data_source: host,
        window: { from, to },
        max_cloud_cover: args.max_cloud_cover,
        scene_count: scenes.length,
        scene: {
          id: best.id,
          datetime: best.datetime,
          cloud_cover: best.cloudCover,
          platform: best.platform,
          mgrs_tile: mgrsTile(item.properties),
          proj_epsg: projEpsg(item.properties),
          processing_baseline: best.processingBaseline,
          thumbnail: httpLink(best.thumbnail),
        },
        band_urls: bandUrls,
        missing_bands: missing,
        ...(bandMath === undefined ? {} : { band_math: bandMath }),
      };
    },
  };
  const cog = {
    timeoutMs: config.timeoutMs,
    userAgent: config.userAgent,
    origins: originSet([stacUrl, ...(config.assetOrigins ?? [])]),
  };
  /** The band_math operation's computation over the chosen scene (activities/imagery/band-math.ts). */
  const expressionOver = async (scene: Scene, cell: string, text: string): Promise<BandMathResult> => {
    const parsed = parseBandExpression(text);
    if (!parsed.ok) throw new ToolError(parsed.error, parsed.detail);
    try {
      return (await computeBandMath(scene, cell, { text, parsed: parsed.value }, { cog, clock: Date.now })).result;
    } catch (error) {
      if (error instanceof ImageDataError) throw new ToolError('imagery_unavailable', error.message);
      throw new ToolError('upstream_unavailable', `reading the band pixels failed: ${publicReadFailure(error)}`);
    }
  };
  // Widened for PerceptionTool[] lists: cellOf's argument type is what keeps the typed tool from widening itself.
  return tool as PerceptionTool;
}
