import { z } from 'zod';
import type { ClassShares } from '../../core/ndvi.js';

/**
 * What Geofabric reads from a STAC item of a Sentinel-2 L2A collection (Earth Search v1 names). The
 * schema is lenient on purpose: catalogs add fields freely, and absent optional properties only narrow
 * what we can say (no baseline → no offset, no class shares → no metadata estimate). Wrong types in the
 * fields we do read make the response malformed.
 */
const percent = z.number().finite().nullish();

const assetSchema = z.looseObject({ href: z.string().min(1) });

export const stacItemSchema = z.looseObject({
  id: z.string().min(1),
  bbox: z.array(z.number()).nullish(),
  properties: z.looseObject({
    datetime: z.string().nullish(),
    start_datetime: z.string().nullish(),
    platform: z.string().nullish(),
    'eo:cloud_cover': percent,
    's2:processing_baseline': z.string().nullish(),
    'earthsearch:boa_offset_applied': z.boolean().nullish(),
    's2:vegetation_percentage': percent,
    's2:not_vegetated_percentage': percent,
    's2:water_percentage': percent,
    's2:snow_ice_percentage': percent,
    's2:cloud_shadow_percentage': percent,
  }),
  assets: z.record(z.string(), assetSchema).default({}),
});

export const stacSearchResponseSchema = z.looseObject({
  type: z.literal('FeatureCollection').optional(),
  features: z.array(stacItemSchema),
});
export type StacItem = z.infer<typeof stacItemSchema>;

/** Asset keys surfaced to clients, in Earth Search v1 naming (B04 red, B03 green, B08 nir, B11 swir16, SCL, TCI visual …). */
export const BAND_KEYS = ['red', 'green', 'blue', 'nir', 'swir16', 'scl', 'visual'] as const;
export type BandKey = (typeof BAND_KEYS)[number];

export interface Scene {
  id: string;
  /** ISO 8601 UTC. */
  datetime: string;
  datetimeMs: number;
  /** Scene-wide cloud cover in percent; null when the catalog does not say. */
  cloudCover: number | null;
  thumbnail: string | null;
  bands: Partial<Record<BandKey, string>>;
  processingBaseline: string | null;
  /** `earthsearch:boa_offset_applied`: the catalog removed the BOA offset from the pixels already. */
  offsetAppliedByCatalog: boolean;
  platform: string | null;
  classShares: ClassShares;
  cloudShadowPercent: number | null;
  /** Every asset's href by key (openEO reads bands beyond BAND_KEYS); absent on scenes not made by toScene. */
  assets?: Record<string, string>;
}

/** An item → a Scene, or a reason it cannot be one (no usable datetime). */
export function toScene(item: StacItem): Scene | string {
  const p = item.properties;
  const when = p.datetime ?? p.start_datetime;
  const ms = when ? Date.parse(when) : NaN;
  if (!Number.isFinite(ms)) return `item ${item.id} has no valid datetime`;
  const bands: Partial<Record<BandKey, string>> = {};
  for (const key of BAND_KEYS) {
    const href = item.assets[key]?.href;
    if (href) bands[key] = href;
  }
  return {
    id: item.id,
    datetime: new Date(ms).toISOString(),
    datetimeMs: ms,
    cloudCover: p['eo:cloud_cover'] ?? null,
    thumbnail: item.assets.thumbnail?.href ?? null,
    bands,
    processingBaseline: p['s2:processing_baseline'] ?? null,
    offsetAppliedByCatalog: p['earthsearch:boa_offset_applied'] === true,
    platform: p.platform ?? null,
    classShares: {
      vegetation: p['s2:vegetation_percentage'] ?? null,
      not_vegetated: p['s2:not_vegetated_percentage'] ?? null,
      water: p['s2:water_percentage'] ?? null,
      snow_ice: p['s2:snow_ice_percentage'] ?? null,
    },
    cloudShadowPercent: p['s2:cloud_shadow_percentage'] ?? null,
    assets: Object.fromEntries(Object.entries(item.assets).map(([key, asset]) => [key, asset.href])),
  };
}

/** Newest first; equal datetimes by id, so the order is stable whatever the catalog returned. */
export const byNewest = (a: Scene, b: Scene): number => b.datetimeMs - a.datetimeMs || a.id.localeCompare(b.id);

/** NDVI's scene choice: the least cloudy (unknown cloud cover counts as worst), ties → newest. */
export function leastCloudy(scenes: readonly Scene[]): Scene | undefined {
  const cloud = (s: Scene) => s.cloudCover ?? Infinity;
  return [...scenes].sort((a, b) => cloud(a) - cloud(b) || byNewest(a, b))[0];
}

/** A catalog link a client may follow: http(s) only (no `javascript:`, `data:`, `file:` …), else null. */
export function httpLink(href: string | null | undefined): string | null {
  if (href === null || href === undefined) return null;
  try {
    const { protocol } = new URL(href);
    return protocol === 'http:' || protocol === 'https:' ? href : null;
  } catch {
    return null;
  }
}

/** The band links a client may follow; others (s3://, javascript: …) are left out. */
export function httpLinks<K extends string>(bands: Partial<Record<K, string>>): Partial<Record<K, string>> {
  const links: Partial<Record<K, string>> = {};
  for (const [key, href] of Object.entries(bands) as [K, string][]) {
    const link = httpLink(href);
    if (link !== null) links[key] = link;
  }
  return links;
}

/** The scene as clients see it in a search result: links http(s) only. */
export const sceneSummary = (scene: Scene) => ({
  id: scene.id,
  datetime: scene.datetime,
  cloudCover: scene.cloudCover,
  thumbnail: httpLink(scene.thumbnail),
  bands: httpLinks(scene.bands),
  processingBaseline: scene.processingBaseline,
  platform: scene.platform,
});
export type SceneSummary = ReturnType<typeof sceneSummary>;
