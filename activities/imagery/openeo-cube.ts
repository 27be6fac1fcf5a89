/**
 * openEO's `load_collection` on the imagery catalog (docs/protocol.md §16.5): a STAC search over the extent and
 * interval, then, per scene and band, a windowed read of the scene's Cloud-Optimized GeoTIFF (the code NDVI and
 * flood use: cog-reader, asset-client) resampled by nearest neighbour onto one grid: the UTM grid of the first
 * scene, at the finest resolution of the bands asked for, covering the extent. Reflectance gets the BOA offset
 * NDVI applies (core/ndvi `baselineOffset`), floored at 0, DN 0 as no-data; SCL is read as is. Every byte range
 * read is kept with its hash for the result's proof record.
 */
import { baselineOffset } from '../../core/ndvi.js';
import { makeCube, type BandInfo, type Cube, type Dimension } from '../../core/openeo/cube.js';
import { proj4Definition, transformBox, transformer } from '../../core/openeo/crs.js';
import { OpenEoError } from '../../core/openeo/errors.js';
import { pixelsInside } from '../../core/openeo/polygons.js';
import type { Callback } from '../../core/openeo/graph.js';
import type { LoadRequest } from '../../core/openeo/processes.js';
import { sentinel2Band, type Sentinel2Band } from '../../core/openeo/sentinel2.js';
import { ServiceError } from '../../core/errors.js';
import type { AssetRead } from './asset-client.js';
import { openCog, publicReadFailure, type CogOptions, type OpenCog } from './cog-reader.js';
import type { Grid, PixelWindow } from './cell-raster.js';
import type { StacClient } from './stac-client.js';
import type { Scene } from './stac-item.js';

/** Scenes one `load_collection` reads at most (the newest of a longer search). */
export const MAX_SCENES = 24;
/** COGs opened and read at once. */
const CONCURRENCY = 6;

export interface CubeLoaderDeps {
  stac: StacClient;
  cog: CogOptions;
  clock: () => number;
  /** Why a read failed (upstream detail), for the logs only. */
  onReadFailure?: (detail: string, context: { sceneId: string; band: string }) => void;
}

/** One COG window read for a cube, as the proof record lists it. */
export interface CubeRead {
  scene: string;
  band: string;
  href: string;
  sha256: string;
  bytes_read: number;
  requests: number;
  ranges: [number, number][];
  crs: string;
  window: PixelWindow | null;
}

export interface LoadedScene {
  id: string;
  datetime: string;
  cloud_cover: number | null;
  processing_baseline: string | null;
  boa_offset: number;
}

/** One `POST /result` (or job): what its `load_collection` calls read, for its proof record. */
export interface CubeSession {
  load(request: LoadRequest): Promise<Cube>;
  scenes(): LoadedScene[];
  reads(): CubeRead[];
  searches(): Record<string, unknown>[];
  /** Values loaded into cubes (x × y × t × bands), over all calls. */
  samples(): number;
}

const isHttp = (href: string | undefined): href is string => href !== undefined && /^https?:\/\//i.test(href);

/** The href of a band in a scene's item, or undefined when the item has none readable over HTTP(S). */
const bandHref = (scene: Scene, band: Sentinel2Band): string | undefined =>
  band.assets.map((key) => scene.assets?.[key]).find(isHttp);

/** The STAC `eo:cloud_cover` bound a property filter allows to push into the search, if it is that simple. */
function cloudBound(filter: Callback | undefined): number | undefined {
  const node = filter?.single;
  if (!node || !['lte', 'lt'].includes(node.process_id)) return undefined;
  const { x, y } = node.arguments ?? {};
  const isValue = (v: unknown) => (v as { from_parameter?: unknown } | undefined)?.from_parameter === 'value';
  return isValue(x) && typeof y === 'number' ? y : undefined;
}

/** Runs `work` over `items`, at most CONCURRENCY at once; the first failure aborts the rest and is thrown. */
async function pool<T, R>(items: readonly T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, items.length) }, worker));
  return results;
}

export function createCubeLoader(deps: CubeLoaderDeps) {
  return {
    /**
     * A session for one process graph. `admit` is asked, before any pixel is read, whether the values loaded over
     * all its `load_collection`s so far plus those of the next may be loaded; it throws the refusal (too many for
     * a synchronous request, over the request's budget).
     */
    session(admit: (samples: number) => void): CubeSession {
      const scenes = new Map<string, LoadedScene>();
      const reads: CubeRead[] = [];
      const searches: Record<string, unknown>[] = [];
      let samples = 0;
      return {
        scenes: () => [...scenes.values()],
        reads: () => reads,
        searches: () => searches,
        samples: () => samples,
        async load(request) {
          const loaded = await loadCube(deps, request, (more) => admit(samples + more), searches);
          samples += loaded.cube.data.length;
          for (const s of loaded.scenes) scenes.set(s.id, s);
          reads.push(...loaded.reads);
          return loaded.cube;
        },
      };
    },
  };
}
export type CubeLoader = ReturnType<typeof createCubeLoader>;

const COLLECTION_START_MS = Date.parse('2015-06-27T00:00:00Z');

async function loadCube(
  deps: CubeLoaderDeps,
  request: LoadRequest,
  admit: (samples: number) => void,
  searches: Record<string, unknown>[],
): Promise<{ cube: Cube; scenes: LoadedScene[]; reads: CubeRead[] }> {
  const bands = request.bands.map((name) => sentinel2Band(name)!);
  const [start, end] = request.temporal;
  const fromMs = start ?? COLLECTION_START_MS;
  const toMs = end ?? deps.clock();
  const [w, s, e, n] = request.extent.box;
  const resolution = Math.min(...bands.map((b) => b.gsd));

  // A first bound before anything is read: the box's area at the finest resolution, per band and scene.
  const utm = transformBox(request.extent.box, 4326, 32600 + Math.floor(((w + e) / 2 + 180) / 6) + 1);
  const pixelsEstimate = Math.ceil(((utm[2]! - utm[0]!) / resolution) * ((utm[3]! - utm[1]!) / resolution));
  admit(pixelsEstimate * bands.length);

  const filter = request.properties['eo:cloud_cover'];
  const search = {
    cell: '',
    intersects: {
      type: 'Polygon' as const,
      coordinates: [
        [
          [w, s],
          [e, s],
          [e, n],
          [w, n],
          [w, s],
        ],
      ],
    },
    window: { fromMs, toMs: Math.max(fromMs, toMs - 1) },
    ...(cloudBound(filter) === undefined ? {} : { cloud: cloudBound(filter)! }),
    limit: MAX_SCENES,
    order: 'newest' as const,
  };
  searches.push(deps.stac.searchBody(search));
  const found = (await deps.stac.search(search)).filter((sc) => sc.datetimeMs >= fromMs && sc.datetimeMs < toMs);
  const kept: Scene[] = [];
  for (const scene of found) {
    if (filter && (await filter.call({ value: scene.cloudCover })) !== true) continue;
    if (bands.every((b) => bandHref(scene, b) !== undefined)) kept.push(scene);
  }
  if (kept.length === 0) {
    throw new OpenEoError(
      'NoDataAvailable',
      found.length === 0
        ? 'There is no data available for the given extents: the catalog has no scene there in that interval.'
        : `There is no data available for the given extents: ${found.length} scene(s) match, none with every ` +
            'band asked for readable over HTTP(S), or none passing the property filter.',
    );
  }
  // Oldest first: openEO's temporal labels ascend.
  kept.sort((a, b) => a.datetimeMs - b.datetimeMs || a.id.localeCompare(b.id));
  admit(pixelsEstimate * bands.length * kept.length);

  // Open every COG (headers only), then fix the grid from the first scene's finest band.
  const abort = new AbortController();
  const jobs = kept.flatMap((scene) => bands.map((band) => ({ scene, band })));
  let opened: OpenCog[];
  try {
    opened = await pool(jobs, ({ scene, band }) =>
      openCog(bandHref(scene, band)!, deps.cog, abort.signal).catch((error: unknown) => {
        throw readFailure(deps, error, scene, band);
      }),
    );
  } catch (error) {
    abort.abort();
    throw error;
  }
  const reference = opened[bands.findIndex((b) => b.gsd === resolution)]!.grid;
  const grid = targetGrid(reference, request.extent.box);
  const size = grid.width * grid.height;
  const labels = [...new Set(kept.map((sc) => sc.datetime))];
  const total = size * labels.length * bands.length;
  try {
    admit(total);
  } catch (error) {
    abort.abort();
    throw error;
  }

  const data = new Float64Array(total).fill(NaN);
  const reads: CubeRead[] = [];
  try {
    await pool(
      jobs.map((job, i) => ({ ...job, cog: opened[i]! })),
      async ({ scene, band, cog }) => {
        const t = labels.indexOf(scene.datetime);
        const b = bands.indexOf(band);
        const offset = band.reflectance
          ? baselineOffset(scene.processingBaseline, scene.offsetAppliedByCatalog).offset
          : 0;
        const window = await resampleInto(cog, grid, data, (t * bands.length + b) * size, (dn) => {
          if (!band.reflectance) return dn;
          return dn === 0 ? NaN : Math.max(0, dn + offset);
        }).catch((error: unknown) => {
          throw readFailure(deps, error, scene, band);
        });
        reads.push(readEntry(scene.id, band.name, cog.summary(), cog.grid, window));
      },
    );
  } catch (error) {
    abort.abort();
    throw error;
  }
  if (request.extent.polygons) maskOutside(data, grid, request.extent.polygons, labels.length * bands.length);

  const xs = Array.from({ length: grid.width }, (_, c) => grid.originX + (c + 0.5) * grid.resX);
  const ys = Array.from({ length: grid.height }, (_, r) => grid.originY + (r + 0.5) * grid.resY);
  const dims: Dimension[] = [
    { name: 't', type: 'temporal', labels },
    { name: 'bands', type: 'bands', labels: bands.map((b) => b.name) },
    { name: 'y', type: 'spatial', axis: 'y', labels: ys, step: grid.resY, crs: grid.epsg },
    { name: 'x', type: 'spatial', axis: 'x', labels: xs, step: grid.resX, crs: grid.epsg },
  ];
  const bandInfo = new Map<string, BandInfo>(
    bands.map((b) => [
      b.name,
      {
        name: b.name,
        ...(b.common_name === undefined ? {} : { common_name: b.common_name }),
        ...(b.center_wavelength === undefined ? {} : { center_wavelength: b.center_wavelength }),
      },
    ]),
  );
  reads.sort((a, b) => a.scene.localeCompare(b.scene) || a.band.localeCompare(b.band));
  return {
    cube: makeCube(dims, data, bandInfo),
    scenes: kept.map((scene) => ({
      id: scene.id,
      datetime: scene.datetime,
      cloud_cover: scene.cloudCover,
      processing_baseline: scene.processingBaseline,
      boa_offset: baselineOffset(scene.processingBaseline, scene.offsetAppliedByCatalog).offset,
    })),
    reads,
  };
}

/** A failed open or read: a business answer for what the image is, else a 502 that says nothing of the upstream. */
function readFailure(deps: CubeLoaderDeps, error: unknown, scene: Scene, band: Sentinel2Band): Error {
  if (error instanceof OpenEoError || error instanceof ServiceError) return error;
  deps.onReadFailure?.((error as Error).message, { sceneId: scene.id, band: band.name });
  return new ServiceError(
    'upstream_unavailable',
    `reading band ${band.name} of scene ${scene.id} failed: ${publicReadFailure(error)}`,
  );
}

/** The grid of the cube: `reference`'s lattice, CRS and pixel size, covering the box. */
function targetGrid(reference: Grid, box: [number, number, number, number]): Grid {
  const [minX, minY, maxX, maxY] = transformBox(box, 4326, reference.epsg) as [number, number, number, number];
  // The reference is a band of the finest resolution asked for: its pixel size is the cube's.
  const res = Math.abs(reference.resX);
  // Aligned to the reference image's pixel edges, so a 10 m band is read without resampling.
  const align = (v: number, origin: number, step: number, round: (n: number) => number) =>
    origin + round((v - origin) / step) * step;
  const originX = align(minX, reference.originX, res, Math.floor);
  const originY = align(maxY, reference.originY, -res, Math.floor);
  const width = Math.max(1, Math.ceil((maxX - originX) / res));
  const height = Math.max(1, Math.ceil((originY - minY) / res));
  return { epsg: reference.epsg, originX, originY, resX: res, resY: -res, width, height };
}

/**
 * Reads the window of `cog` under `grid` and writes, for each grid pixel, the value of the source pixel under
 * its centre (mapped by `value`; NaN where the image does not reach) at `data[at + row * width + col]`.
 * Returns the window read, or null when the image does not meet the grid.
 */
async function resampleInto(
  cog: OpenCog,
  grid: Grid,
  data: Float64Array,
  at: number,
  value: (dn: number) => number,
): Promise<PixelWindow | null> {
  const src = cog.grid;
  const toSource = transformer(grid.epsg, src.epsg);
  const sameCrs = grid.epsg === src.epsg;
  if (!sameCrs && proj4Definition(src.epsg) === null) throw new OpenEoError('NoDataAvailable', 'unsupported image CRS');
  // Source pixel (column, row) under each grid pixel centre; −1 outside the image.
  const cols = new Int32Array(grid.width * (sameCrs ? 1 : grid.height));
  const rows = new Int32Array(grid.height * (sameCrs ? 1 : grid.width));
  const sourceOf = (x: number, y: number): [number, number] => {
    const [sx, sy] = toSource([x, y]);
    const c = Math.floor((sx - src.originX) / src.resX);
    const r = Math.floor((sy - src.originY) / src.resY);
    return [c >= 0 && c < src.width ? c : -1, r >= 0 && r < src.height ? r : -1];
  };
  const centreX = (c: number) => grid.originX + (c + 0.5) * grid.resX;
  const centreY = (r: number) => grid.originY + (r + 0.5) * grid.resY;
  if (sameCrs) {
    for (let c = 0; c < grid.width; c++) cols[c] = sourceOf(centreX(c), grid.originY)[0];
    for (let r = 0; r < grid.height; r++) rows[r] = sourceOf(grid.originX, centreY(r))[1];
  } else {
    for (let r = 0; r < grid.height; r++) {
      for (let c = 0; c < grid.width; c++) {
        const [sc, sr] = sourceOf(centreX(c), centreY(r));
        cols[r * grid.width + c] = sc;
        rows[r * grid.width + c] = sr;
      }
    }
  }
  let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
  for (let i = 0; i < cols.length; i++) if (cols[i]! >= 0) [x0, x1] = [Math.min(x0, cols[i]!), Math.max(x1, cols[i]!)];
  for (let i = 0; i < rows.length; i++) if (rows[i]! >= 0) [y0, y1] = [Math.min(y0, rows[i]!), Math.max(y1, rows[i]!)];
  if (!(x1 >= x0 && y1 >= y0)) return null;
  const window: PixelWindow = [x0, y0, x1 + 1, y1 + 1];
  const pixels = await cog.read(window);
  const width = window[2] - window[0];
  for (let r = 0; r < grid.height; r++) {
    for (let c = 0; c < grid.width; c++) {
      const sc = sameCrs ? cols[c]! : cols[r * grid.width + c]!;
      const sr = sameCrs ? rows[r]! : rows[r * grid.width + c]!;
      if (sc < 0 || sr < 0) continue;
      data[at + r * grid.width + c] = value(pixels[(sr - y0) * width + (sc - x0)]!);
    }
  }
  return window;
}

/** No-data outside the extent's polygons (a GeoJSON extent reads its box, then keeps the inside). */
function maskOutside(data: Float64Array, grid: Grid, polygons: readonly number[][][][], planes: number): void {
  const forward = transformer(4326, grid.epsg);
  const xs = Array.from({ length: grid.width }, (_, c) => grid.originX + (c + 0.5) * grid.resX);
  const ys = Array.from({ length: grid.height }, (_, r) => grid.originY + (r + 0.5) * grid.resY);
  const inside = new Uint8Array(grid.width * grid.height);
  for (const rings of polygons) {
    const projected = rings.map((ring) => ring.map((p) => forward([p[0]!, p[1]!])));
    for (const at of pixelsInside(projected, xs, ys)) inside[at] = 1;
  }
  const size = inside.length;
  for (let p = 0; p < planes; p++) for (let i = 0; i < size; i++) if (inside[i] === 0) data[p * size + i] = NaN;
}

function readEntry(scene: string, band: string, read: AssetRead, grid: Grid, window: PixelWindow | null): CubeRead {
  return {
    scene,
    band,
    href: read.href,
    sha256: read.sha256,
    bytes_read: read.bytesRead,
    requests: read.requests,
    ranges: read.ranges,
    crs: `EPSG:${grid.epsg}`,
    window,
  };
}
