/**
 * A flood scene pair over the Rome cell (UTM 33N, the grid of cog-fixture's romeScene): green (B03) at 10 m,
 * swir16 (B11) and SCL at 20 m. Only a 100×100-pixel square in the middle of the cell has data (SCL 0 around
 * it), so every count below is known by hand whatever the cell's outline. Blocks are in 10 m pixel columns
 * and rows [from, to) of the 1280×1280 image, all even, so each 20 m pixel lies wholly in one block.
 *
 *   square       cols 590–690, rows 590–690   10 000 px
 *   cloud now    cols 590–610, rows 590–610      400 px (SCL 9)
 *   water now    cols 640–680, rows 600–650    2 000 px
 *   water before cols 640–680, rows 600–620      800 px (inside the water now)
 *   cloud before cols 640–660, rows 630–650      400 px (SCL 8, inside the water now)
 *
 * Now: valid 9 600, water 2 000 → water_fraction 2000/9600. Valid in both: 10 000 − 400 − 400 = 9 200; water now
 * and dry before: 2 000 − 800 − 400 = 800 → flood_fraction 800/9200.
 */
import { romeScene, writeTiledGeoTiff, type TiffGrid } from './cog-fixture.js';
import type { StacServer } from './stac-server.js';

type Block = [c0: number, r0: number, c1: number, r1: number];
const within = ([c0, r0, c1, r1]: Block, c: number, r: number) => c >= c0 && c < c1 && r >= r0 && r < r1;

export const SQUARE: Block = [590, 590, 690, 690];
export const CLOUD_NOW: Block = [590, 590, 610, 610];
export const WATER_NOW: Block = [640, 600, 680, 650];
export const WATER_BEFORE: Block = [640, 600, 680, 620];
export const CLOUD_BEFORE: Block = [640, 630, 660, 650];

/** DNs with the +1000 BOA offset of baseline 04.00: land green 600 < swir 1500 reflectance ×10⁴, water 900 > 200. */
export const LAND = { green: 1600, swir: 2500 } as const;
export const WATER = { green: 1900, swir: 1200 } as const;
/** Bright cloud: green > swir, so an unmasked cloud would count as water. */
export const CLOUD = { green: 7000, swir: 6000 } as const;

export interface FloodFiles {
  green: Uint8Array;
  swir16: Uint8Array;
  scl: Uint8Array;
}

function sceneFiles(grid: TiffGrid, sclGrid: TiffGrid, water: Block, cloud: Block, cloudClass: number): FloodFiles {
  const kind = (c: number, r: number): 'none' | 'cloud' | 'water' | 'land' =>
    !within(SQUARE, c, r) ? 'none' : within(cloud, c, r) ? 'cloud' : within(water, c, r) ? 'water' : 'land';
  const dn = { none: LAND, land: LAND, water: WATER, cloud: CLOUD } as const;
  const green = new Uint16Array(grid.width * grid.height);
  for (let r = 0; r < grid.height; r++)
    for (let c = 0; c < grid.width; c++) green[r * grid.width + c] = dn[kind(c, r)].green;
  const swir = new Uint16Array(sclGrid.width * sclGrid.height);
  const scl = new Uint8Array(sclGrid.width * sclGrid.height);
  for (let r = 0; r < sclGrid.height; r++) {
    for (let c = 0; c < sclGrid.width; c++) {
      const k = kind(2 * c, 2 * r);
      swir[r * sclGrid.width + c] = dn[k].swir;
      scl[r * sclGrid.width + c] = k === 'none' ? 0 : k === 'cloud' ? cloudClass : k === 'water' ? 6 : 5;
    }
  }
  return {
    green: writeTiledGeoTiff(grid, green),
    swir16: writeTiledGeoTiff(sclGrid, swir),
    scl: writeTiledGeoTiff(sclGrid, scl),
  };
}

let cached: { now: FloodFiles; before: FloodFiles } | undefined;

/** The current (flooded, clouded) scene and the reference scene, on one grid. */
export function floodScenes(): { now: FloodFiles; before: FloodFiles } {
  if (!cached) {
    const { grid, sclGrid } = romeScene({ size: 1280 });
    cached = {
      now: sceneFiles(grid, sclGrid, WATER_NOW, CLOUD_NOW, 9),
      before: sceneFiles(grid, sclGrid, WATER_BEFORE, CLOUD_BEFORE, 8),
    };
  }
  return cached;
}

/**
 * Serves the flood scenes' files (`flood-<name>-<band>.tif`) and answers each scene's STAC assets by name: the set-up
 * every flood test and the chaos run share.
 */
export function serveFloodScenes(
  stac: Pick<StacServer, 'files' | 'fileUrl'>,
  scenes: Record<string, FloodFiles> = floodScenes(),
): (name: string) => { green: string; swir16: string; scl: string } {
  for (const [name, files] of Object.entries(scenes)) {
    stac.files.set(`flood-${name}-green.tif`, files.green);
    stac.files.set(`flood-${name}-swir16.tif`, files.swir16);
    stac.files.set(`flood-${name}-scl.tif`, files.scl);
  }
  return (name) => ({
    green: stac.fileUrl(`flood-${name}-green.tif`),
    swir16: stac.fileUrl(`flood-${name}-swir16.tif`),
    scl: stac.fileUrl(`flood-${name}-scl.tif`),
  });
}
