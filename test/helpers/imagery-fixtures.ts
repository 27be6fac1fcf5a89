/**
 * The imagery tests' catalog: a local STAC server holding the Rome COGs (built once per process) and
 * builders for Earth Search style items pointing at them. All dates sit in February 2026, and TEST_NOW
 * (1 March 2026) is the gateway clock: after the proof genesis, so records get ordinary epochs.
 */
import { writeTiledGeoTiff, romeScene, romeSceneWgs84, type SceneFiles } from './cog-fixture.js';
import { sentinelItem, startStacServer, type StacItemJson, type StacServer } from './stac-server.js';

export const TEST_NOW = Date.parse('2026-03-01T12:00:00Z');

let cached: { rome: SceneFiles; wgs84: ReturnType<typeof romeSceneWgs84>; cloudyScl: Uint8Array } | undefined;
function files() {
  if (!cached) {
    const rome = romeScene();
    const sclPixels = new Uint8Array(rome.sclGrid.width * rome.sclGrid.height).fill(9);
    cached = { rome, wgs84: romeSceneWgs84(), cloudyScl: writeTiledGeoTiff(rome.sclGrid, sclPixels) };
  }
  return cached;
}

export interface ImageryCatalog {
  stac: StacServer;
  rome: SceneFiles;
  /** Assets of the Rome scene: red, nir, scl (+ visual, thumbnail URLs that are never read). */
  romeAssets(options?: { scl?: 'clear' | 'cloudy' | 'none' }): Record<string, string>;
  wgs84Assets(): Record<string, string>;
  /** An item in Rome on `day` (of February 2026) with `properties` over the defaults. */
  item(id: string, day: number, assets: Record<string, string>, properties?: Record<string, unknown>): StacItemJson;
}

export async function startImageryCatalog(): Promise<ImageryCatalog> {
  const stac = await startStacServer();
  const { rome, wgs84, cloudyScl } = files();
  stac.files.set('rome-red.tif', rome.red);
  stac.files.set('rome-nir.tif', rome.nir);
  stac.files.set('rome-scl.tif', rome.scl);
  stac.files.set('rome-scl-cloudy.tif', cloudyScl);
  stac.files.set('wgs84-red.tif', wgs84.red);
  stac.files.set('wgs84-nir.tif', wgs84.nir);
  return {
    stac,
    rome,
    romeAssets: ({ scl = 'clear' } = {}) => ({
      red: stac.fileUrl('rome-red.tif'),
      nir: stac.fileUrl('rome-nir.tif'),
      ...(scl === 'none' ? {} : { scl: stac.fileUrl(scl === 'clear' ? 'rome-scl.tif' : 'rome-scl-cloudy.tif') }),
      visual: stac.fileUrl('rome-visual.tif'),
      thumbnail: stac.fileUrl('rome-thumbnail.jpg'),
    }),
    wgs84Assets: () => ({ red: stac.fileUrl('wgs84-red.tif'), nir: stac.fileUrl('wgs84-nir.tif') }),
    item: (id, day, assets, properties = {}) =>
      sentinelItem(id, `2026-02-${String(day).padStart(2, '0')}T10:00:00Z`, { assets, properties }),
  };
}

/** Assets on S3, as Earth Search lists them under `alternate`: not readable over HTTP. */
export const S3_ASSETS = {
  red: 's3://sentinel-cogs/sentinel-s2-l2a-cogs/33/T/TG/2026/2/S2A_33TTG_20260210_0_L2A/B04.tif',
  nir: 's3://sentinel-cogs/sentinel-s2-l2a-cogs/33/T/TG/2026/2/S2A_33TTG_20260210_0_L2A/B08.tif',
  scl: 's3://sentinel-cogs/sentinel-s2-l2a-cogs/33/T/TG/2026/2/S2A_33TTG_20260210_0_L2A/SCL.tif',
};

/** Scene-classification shares whose metadata estimate is (40·0.7 + 30·0.15 + 10·(−0.3)) / 80 = 0.36875. */
export const SHARES = {
  's2:vegetation_percentage': 40,
  's2:not_vegetated_percentage': 30,
  's2:water_percentage': 10,
  's2:snow_ice_percentage': 0,
};
