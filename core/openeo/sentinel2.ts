/**
 * The openEO collection `SENTINEL2_L2A` (docs/protocol.md §16.3): Sentinel-2 L2A surface reflectance from the
 * configured STAC catalog. Its bands carry the names openEO users know (`B01` … `B12`, `B8A`, `SCL`) with their
 * STAC common names, so a client's `ndvi()` finds `red` and `nir` by itself; each is read from the item asset
 * Earth Search v1 names it (`red`, `nir` …) or, in catalogs that key assets by band, the band name. B10 (cirrus)
 * is not part of L2A products.
 */
import type { BandInfo } from './cube.js';

export const COLLECTION_ID = 'SENTINEL2_L2A';

export interface Sentinel2Band extends BandInfo {
  /** Ground sampling distance in metres. */
  gsd: number;
  /** Item asset keys that hold the band, in order of preference. */
  assets: readonly string[];
  /** Surface reflectance × 10 000 (the BOA offset applies); false for the scene classification. */
  reflectance: boolean;
  description: string;
}

const band = (
  name: string,
  common: string | undefined,
  wavelength: number | undefined,
  gsd: number,
  asset: string,
  description: string,
): Sentinel2Band => ({
  name,
  ...(common === undefined ? {} : { common_name: common }),
  ...(wavelength === undefined ? {} : { center_wavelength: wavelength }),
  gsd,
  assets: [asset, name, name.toLowerCase()],
  reflectance: name !== 'SCL',
  description,
});

export const SENTINEL2_BANDS: readonly Sentinel2Band[] = [
  band('B01', 'coastal', 0.443, 60, 'coastal', 'Coastal aerosol'),
  band('B02', 'blue', 0.49, 10, 'blue', 'Blue'),
  band('B03', 'green', 0.56, 10, 'green', 'Green'),
  band('B04', 'red', 0.665, 10, 'red', 'Red'),
  band('B05', 'rededge', 0.704, 20, 'rededge1', 'Vegetation red edge 1'),
  band('B06', 'rededge', 0.74, 20, 'rededge2', 'Vegetation red edge 2'),
  band('B07', 'rededge', 0.783, 20, 'rededge3', 'Vegetation red edge 3'),
  band('B08', 'nir', 0.842, 10, 'nir', 'Near infrared'),
  band('B8A', 'nir08', 0.865, 20, 'nir08', 'Narrow near infrared'),
  band('B09', 'nir09', 0.945, 60, 'nir09', 'Water vapour'),
  band('B11', 'swir16', 1.61, 20, 'swir16', 'Short-wave infrared 1.6 µm'),
  band('B12', 'swir22', 2.19, 20, 'swir22', 'Short-wave infrared 2.2 µm'),
  band('SCL', undefined, undefined, 20, 'scl', 'Scene classification (0 no data … 11 snow or ice)'),
];

export const SENTINEL2_BAND_NAMES = SENTINEL2_BANDS.map((b) => b.name);

/** A band by its name or, failing that, by a common name only one band has. */
export function sentinel2Band(nameOrCommon: string): Sentinel2Band | undefined {
  const byName = SENTINEL2_BANDS.find((b) => b.name === nameOrCommon);
  if (byName) return byName;
  const byCommon = SENTINEL2_BANDS.filter((b) => b.common_name === nameOrCommon);
  return byCommon.length === 1 ? byCommon[0] : undefined;
}

/** Where the collection's data exist, unless the catalog says otherwise. */
export const DEFAULT_EXTENT = {
  spatial: { bbox: [[-180, -56, 180, 84]] as number[][] },
  temporal: { interval: [['2015-06-27T00:00:00Z', null]] as (string | null)[][] },
};

const eoBands = () =>
  SENTINEL2_BANDS.map((b) => ({
    name: b.name,
    ...(b.common_name === undefined ? {} : { common_name: b.common_name }),
    ...(b.center_wavelength === undefined ? {} : { center_wavelength: b.center_wavelength }),
    gsd: b.gsd,
    description: b.description,
  }));

/** The short entry of `GET /collections`. */
export function collectionSummary(extent: typeof DEFAULT_EXTENT, links: object[]) {
  return {
    stac_version: '1.0.0',
    stac_extensions: ['https://stac-extensions.github.io/datacube/v2.2.0/schema.json'],
    type: 'Collection' as const,
    id: COLLECTION_ID,
    title: 'Sentinel-2 L2A surface reflectance',
    description:
      'Sentinel-2 Level-2A bottom-of-atmosphere reflectance, read from the Cloud-Optimized GeoTIFFs of the ' +
      "configured STAC catalog. Reflectance bands are digital numbers (reflectance × 10 000) with the baseline's " +
      'BOA offset already applied (processing baseline 04.00 and later), negative values floored at 0 and 0 as ' +
      'no-data; SCL is the scene classification. Data cubes are built on the UTM grid of the scenes, at the ' +
      'finest resolution of the bands loaded (nearest neighbour), one time label per scene.',
    license: 'proprietary',
    keywords: ['copernicus', 'esa', 'msi', 'sentinel', 'sentinel-2', 'l2a', 'reflectance'],
    providers: [
      { name: 'European Space Agency (ESA)', roles: ['producer', 'licensor'], url: 'https://sentinel.esa.int' },
    ],
    extent,
    links,
  };
}

/** The full description of `GET /collections/{id}`: the summary plus `cube:dimensions` and `summaries`. */
export function collectionDescription(extent: typeof DEFAULT_EXTENT, links: object[]) {
  const [west, south, east, north] = extent.spatial.bbox[0] ?? [-180, -56, 180, 84];
  const [start, end] = extent.temporal.interval[0] ?? ['2015-06-27T00:00:00Z', null];
  return {
    ...collectionSummary(extent, links),
    'cube:dimensions': {
      x: { type: 'spatial', axis: 'x', extent: [west, east], reference_system: 4326 },
      y: { type: 'spatial', axis: 'y', extent: [south, north], reference_system: 4326 },
      t: { type: 'temporal', extent: [start, end], step: null },
      bands: { type: 'bands', values: SENTINEL2_BAND_NAMES },
    },
    summaries: {
      constellation: ['sentinel-2'],
      platform: ['sentinel-2a', 'sentinel-2b', 'sentinel-2c'],
      instruments: ['msi'],
      'eo:cloud_cover': { minimum: 0, maximum: 100 },
      'eo:bands': eoBands(),
    },
  };
}
