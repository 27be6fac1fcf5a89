import { borders, feature, featuresContaining } from '@rapideditor/country-coder';
import { bboxOf, cellFootprint, footprintMeets, type Bbox, type PolygonRings } from './cell-footprint.js';
import { cellCentroid } from './h3-cell.js';
import {
  DEFAULT_MAX_AUTONOMY_TIER,
  EEA_NON_EU_COUNTRIES,
  GROUP_FRAMEWORKS,
  JURISDICTION_GROUPS,
  NATIONAL_FRAMEWORKS,
  REGULATORY_FRAMEWORKS,
  SUBDIVISION_FRAMEWORKS,
  US_SUBDIVISION_CODES,
  type FrameworkId,
  type JurisdictionGroup,
  type RegulatoryFramework,
} from './regulatory-frameworks.js';
import { agentTierRank, type AgentTier } from './tiers.js';
import { usStateAt, usStatesMeeting } from './us-states.js';

export type { RegulatoryFramework } from './regulatory-frameworks.js';

/**
 * Gate 2: an H3 cell's centroid resolved to a country with country-coder's offline borders (which
 * include territorial waters), then to the regulatory frameworks that apply there.
 */
export interface Jurisdiction {
  h3_cell: string;
  /** ISO 3166-1 alpha-2 of the sovereign country; null over open sea and in places without an ISO code. */
  country_code: string | null;
  country_name: string | null;
  /**
   * `<country>-<code>` for the part of the country the cell lies in, when the borders data knows it:
   * dependent territories by their own alpha-2 (US-PR, CN-HK, FR-RE, DK-GL), Hawaii, Alaska and the
   * four countries of the UK, and US states (from us-atlas, since country-coder draws none). This is
   * the ISO 3166-2 code for the US, UK, China and the Netherlands.
   */
  subdivision_code: string | null;
  groups: string[];
  frameworks: RegulatoryFramework[];
  /**
   * The strictest cap of `frameworks`; DEFAULT_MAX_AUTONOMY_TIER where none is known. Where state law
   * differs but the state cannot be resolved (contiguous US), also the strictest state's cap.
   */
  max_autonomy_tier: AgentTier;
}

/** The fields of country-coder's region features that we read (its typings depend on @types/geojson). */
interface RegionProperties {
  id: string;
  iso1A2?: string;
  nameEn: string;
  country?: string;
  level: string;
}

const propertiesOf = (region: unknown): RegionProperties | null =>
  (region as { properties: RegionProperties } | null)?.properties ?? null;

const REGIONS = (borders.features as unknown[]).map(propertiesOf).filter((p) => p !== null);

/** Sub-national regions country-coder draws without an ISO code, keyed by its (Wikidata) id. */
const SUBDIVISIONS_BY_REGION_ID: Readonly<Record<string, string>> = {
  Q782: 'US-HI',
  Q797: 'US-AK',
  Q21: 'GB-ENG',
  Q22: 'GB-SCT',
  Q25: 'GB-WLS',
  Q26: 'GB-NIR',
};

/**
 * Countries whose sub-national law we list: where a cell's subdivision cannot be resolved (US coastal
 * waters outside every state polygon), the strictest subdivision's cap applies.
 */
const COUNTRIES_WITH_UNRESOLVED_SUBDIVISIONS: ReadonlySet<string> = new Set(['US']);

/** Alpha-2 codes a location can resolve to: countries, dependent territories, and Antarctica. */
const ISO_CODES: ReadonlySet<string> = new Set(
  REGIONS.filter((r) => r.level === 'country' || r.level === 'territory' || r.id === 'AQ').flatMap((r) =>
    r.iso1A2 ? [r.iso1A2] : [],
  ),
);

const TERRITORY_SUBDIVISIONS: ReadonlySet<string> = new Set(
  REGIONS.filter((r) => r.level === 'territory' && r.iso1A2 && r.country).map((r) => `${r.country}-${r.iso1A2}`),
);

const KNOWN_SUBDIVISIONS: ReadonlySet<string> = new Set([
  ...US_SUBDIVISION_CODES,
  ...TERRITORY_SUBDIVISIONS,
  ...Object.values(SUBDIVISIONS_BY_REGION_ID),
]);

const GROUPS: ReadonlySet<string> = new Set(JURISDICTION_GROUPS);

// Gate 2 runs on every request; the point-in-polygon lookup is worth caching per cell.
const CACHE_LIMIT = 4096;
const cache = new Map<string, Jurisdiction>();

/**
 * Resolves a cell (the caller has validated it) to its jurisdiction. The result is frozen and shared
 * between callers.
 */
export function resolveJurisdiction(cell: string): Jurisdiction {
  const cached = cache.get(cell);
  if (cached) {
    // Re-insert so the Map's insertion order is least-recently-used first.
    cache.delete(cell);
    cache.set(cell, cached);
    return cached;
  }
  const resolved = computeJurisdiction(cell);
  if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
  cache.set(cell, resolved);
  return resolved;
}

/**
 * Every place a cell touches (docs/security.md "The fifth gate"): the centroid's place (resolveJurisdiction)
 * first, then each other distinct place whose borders the cell's outline meets, in the borders data's order. A
 * cell meets a region when its outline (core/cell-footprint.ts) and one of the region's polygons share a point;
 * a contiguous-US region is split further into the us-atlas states the cell meets. A rule that refuses at any of
 * them refuses the cell (fail closed). Limits: the borders are country-coder's, generalised (land borders drawn to
 * a few kilometres, territorial waters roughly), so a cell within that distance of a border may be judged to touch
 * it, or not; over open sea a cell touches nothing beyond its centroid's place. The result is frozen and cached per
 * cell (a large cell near many borders takes about a millisecond; most cells are inside one region and far less).
 */
export function touchedJurisdictions(cell: string): readonly Jurisdiction[] {
  const cached = touchedCache.get(cell);
  if (cached) {
    touchedCache.delete(cell);
    touchedCache.set(cell, cached);
    return cached;
  }
  const touched = computeTouched(cell);
  if (touchedCache.size >= CACHE_LIMIT) touchedCache.delete(touchedCache.keys().next().value as string);
  touchedCache.set(cell, touched);
  return touched;
}

const touchedCache = new Map<string, readonly Jurisdiction[]>();

/** One polygon of a region country-coder draws (the smallest regions: a point lies in at most one). */
interface DrawnPolygon {
  region: RegionProperties;
  rings: PolygonRings;
  bbox: Bbox;
}

let drawn: DrawnPolygon[] | undefined;

/** Built on first use: only the tool policy asks for touched places. */
function drawnPolygons(): DrawnPolygon[] {
  drawn ??= (borders.features as unknown[]).flatMap((f) => {
    const region = propertiesOf(f);
    const geometry = (f as { geometry?: { type: string; coordinates: unknown } | null }).geometry;
    if (region === null || !geometry) return [];
    const polygons =
      geometry.type === 'Polygon'
        ? [geometry.coordinates as PolygonRings]
        : geometry.type === 'MultiPolygon'
          ? (geometry.coordinates as PolygonRings[])
          : [];
    return polygons.map((rings) => ({ region, rings, bbox: bboxOf(rings) }));
  });
  return drawn;
}

const placeKey = (j: Jurisdiction): string =>
  `${j.country_code}|${j.country_name}|${j.subdivision_code}|${j.groups.join(',')}`;

function computeTouched(cell: string): readonly Jurisdiction[] {
  const centre = resolveJurisdiction(cell);
  const places = new Map<string, Jurisdiction>([[placeKey(centre), centre]]);
  const footprint = cellFootprint(cell);
  const met = new Set<string>();
  for (const { region, rings, bbox } of drawnPolygons()) {
    if (met.has(region.id) || !footprintMeets(footprint, rings, bbox)) continue;
    met.add(region.id);
    const containing = (featuresContaining(region.id) as unknown[]).map(propertiesOf).filter((p) => p !== null);
    const country = countryOf(region);
    const code = country?.iso1A2 ?? null;
    const own = code === null ? null : subdivisionOf(code, containing);
    const states = code === 'US' && own === null ? usStatesMeeting(footprint) : [];
    for (const subdivision of states.length > 0 ? states : [own]) {
      const place = placeOf(cell, country, containing, subdivision);
      const key = placeKey(place);
      if (!places.has(key)) places.set(key, place);
    }
  }
  return Object.freeze([...places.values()]);
}

function computeJurisdiction(cell: string): Jurisdiction {
  const { lat, lng } = cellCentroid(cell);
  const location: [number, number] = [lng, lat];
  const containing = (featuresContaining(location) as unknown[]).map(propertiesOf).filter((p) => p !== null);
  const country = containing[0] === undefined ? null : countryOf(containing[0]);
  const countryCode = country?.iso1A2 ?? null;
  const subdivision =
    countryCode === null
      ? null
      : (subdivisionOf(countryCode, containing) ?? (countryCode === 'US' ? usStateAt(lng, lat) : null));
  return placeOf(cell, country, containing, subdivision);
}

/**
 * The country a point lies in, from the smallest region containing it (the first of `featuresContaining`), as
 * country-coder's `feature(point)` answers: the region's own country, else the first region of country level or
 * above among it and its groups.
 */
function countryOf(smallest: RegionProperties): RegionProperties | null {
  const code = smallest.country ?? smallest.iso1A2;
  const own = code === undefined ? null : propertiesOf(feature(code));
  if (own !== null) return own;
  const containing = (featuresContaining(smallest.id) as unknown[]).map(propertiesOf).filter((p) => p !== null);
  return containing.find((r) => COUNTRY_OR_ABOVE.has(r.level)) ?? null;
}

/** country-coder's levels from `country` up (its `feature` falls back to the first of these). */
const COUNTRY_OR_ABOVE: ReadonlySet<string> = new Set([
  'country',
  'sharedLandform',
  'intermediateRegion',
  'subregion',
  'region',
  'subunion',
  'union',
  'unitedNations',
  'world',
]);

/** The place: a country (or none), the regions containing it (smallest first) and its subdivision. */
function placeOf(
  cell: string,
  country: RegionProperties | null,
  containing: readonly RegionProperties[],
  subdivision: string | null,
): Jurisdiction {
  const countryCode = country?.iso1A2 ?? null;
  const groups = groupsOf(countryCode, containing);
  const frameworks = frameworksFor(countryCode, subdivision, groups);

  let tier =
    frameworks.length === 0 ? DEFAULT_MAX_AUTONOMY_TIER : strictest(frameworks.map((f) => f.max_autonomy_tier));
  if (countryCode !== null && subdivision === null && COUNTRIES_WITH_UNRESOLVED_SUBDIVISIONS.has(countryCode)) {
    // The state is unknown, so the strictest state's law may apply.
    const stateCaps = Object.entries(SUBDIVISION_FRAMEWORKS)
      .filter(([code]) => code.startsWith(`${countryCode}-`))
      .flatMap(([, entry]) => entry?.frameworks ?? [])
      .map((id) => REGULATORY_FRAMEWORKS[id].max_autonomy_tier);
    tier = strictest([tier, ...stateCaps]);
  }

  const jurisdiction: Jurisdiction = {
    h3_cell: cell,
    country_code: countryCode,
    country_name: country?.nameEn ?? null,
    subdivision_code: subdivision,
    groups,
    frameworks,
    max_autonomy_tier: tier,
  };
  Object.freeze(groups);
  Object.freeze(frameworks);
  return Object.freeze(jurisdiction);
}

function subdivisionOf(countryCode: string, containing: readonly RegionProperties[]): string | null {
  for (const region of containing) {
    if (region.level === 'territory' && region.iso1A2 && region.country === countryCode) {
      return `${countryCode}-${region.iso1A2}`;
    }
    const known = SUBDIVISIONS_BY_REGION_ID[region.id];
    if (known?.startsWith(`${countryCode}-`)) return known;
  }
  return null;
}

function groupsOf(countryCode: string | null, containing: readonly RegionProperties[]): JurisdictionGroup[] {
  // Membership is by location, not by country: Réunion is in the EU, Greenland and the Faroes are not.
  const inEu = containing.some((r) => r.id === 'EU');
  // The EEA Agreement does not extend to Svalbard.
  const inEea =
    inEu ||
    (countryCode !== null && EEA_NON_EU_COUNTRIES.includes(countryCode) && !containing.some((r) => r.id === 'SJ'));
  return [...(inEu ? (['EU'] as const) : []), ...(inEea ? (['EEA'] as const) : [])];
}

function frameworksFor(
  countryCode: string | null,
  subdivision: string | null,
  groups: readonly JurisdictionGroup[],
): RegulatoryFramework[] {
  const local = subdivision === null ? undefined : SUBDIVISION_FRAMEWORKS[subdivision];
  const national = countryCode === null || local?.replaces_national ? [] : (NATIONAL_FRAMEWORKS[countryCode] ?? []);
  const ids = new Set<FrameworkId>([
    ...groups.flatMap((group) => GROUP_FRAMEWORKS[group]),
    ...national,
    ...(local?.frameworks ?? []),
  ]);
  return [...ids].map((id) => REGULATORY_FRAMEWORKS[id]);
}

const strictest = (tiers: readonly AgentTier[]): AgentTier =>
  tiers.reduce((a, b) => (agentTierRank(b) < agentTierRank(a) ? b : a));

/**
 * True for codes a client may name in `x-svc-jurisdiction`: a group (EU, EEA), an ISO 3166-1 alpha-2
 * code the borders data knows (IT, US, HK …) or a subdivision code (US-CA, US-PR, GB-SCT …).
 * Case-insensitive; aliases such as 'UK' are not accepted.
 */
export function isKnownJurisdictionCode(code: string): boolean {
  const upper = code.toUpperCase();
  return GROUPS.has(upper) || ISO_CODES.has(upper) || KNOWN_SUBDIVISIONS.has(upper);
}

/**
 * True when the jurisdiction lies within `code`: a group it belongs to, its country, its subdivision,
 * or a dependent territory's own alpha-2 ('PR' matches US-PR). Unknown codes match nothing.
 */
export function isInJurisdiction(j: Jurisdiction, code: string): boolean {
  const upper = code.toUpperCase();
  if (!isKnownJurisdictionCode(upper)) return false;
  if (j.groups.includes(upper) || upper === j.country_code || upper === j.subdivision_code) return true;
  // Only territories: 'CA' is Canada and must not match US-CA.
  const asTerritory = `${j.country_code}-${upper}`;
  return TERRITORY_SUBDIVISIONS.has(asTerritory) && asTerritory === j.subdivision_code;
}
