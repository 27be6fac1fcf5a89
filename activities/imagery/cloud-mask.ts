import { SCL_CLOUD, SCL_CLOUD_SHADOW } from '../../core/ndvi.js';
import { imageCost } from '../../core/pricing.js';
import { windowHeight, windowWidth } from './cell-raster.js';
import { cellWindow, ImageDataError, openCog, publicReadFailure, type CogOptions } from './cog-reader.js';
import { MAX_WINDOW_MEGAPIXELS, schemeOf } from './ndvi-pixels.js';
import type { Scene } from './stac-item.js';

export interface CloudMaskResult {
  sceneId: string;
  datetime: string;
  h3Cell: string;
  /** Scene-wide `eo:cloud_cover`, percent (docs/protocol.md §2.5's cloud_mask). */
  cloudCover: number | null;
  /** Percent of the cell's classified pixels that are cloud (SCL 8, 9, 10); null when SCL was not read. */
  cellCloudCover: number | null;
  /** Percent of the cell's classified pixels that are cloud shadow (SCL 3); null likewise. */
  cellCloudShadow: number | null;
  method: 'pixels' | 'metadata';
  description: string;
  /** SCL pixels read (20 m grid), in megapixels. */
  megapixels: number;
  cost: number;
  processingMs: number;
}

const round2 = (value: number) => Math.round(value * 100) / 100;

/**
 * The scene's cloud cover, plus the cell's own cloud fraction from the 20 m scene classification band
 * when it is readable over HTTP(S). A failed SCL read leaves the scene figure alone and says why.
 */
export async function computeCloudMask(
  scene: Scene,
  cell: string,
  deps: { cog: CogOptions; clock: () => number; onReadFailure?: (detail: string) => void },
): Promise<{ result: CloudMaskResult; payload: Record<string, unknown> }> {
  const started = deps.clock();
  const href = scene.bands.scl;
  let reason: string | null = null;
  let tally: { cloud: number; shadow: number; classified: number; inside: number } | null = null;
  let read: Record<string, unknown> | null = null;
  let megapixels = 0;
  if (!href) reason = 'the scene lists no scene classification (scl) asset';
  else if (!/^https?:\/\//i.test(href)) reason = `the scl asset is not reachable over HTTP(S) (${schemeOf(href)})`;
  else {
    try {
      const scl = await openCog(href, deps.cog);
      const area = cellWindow(cell, scl.grid);
      if (!area) throw new ImageDataError('the cell lies outside the scene image');
      const mp = (windowWidth(area.window) * windowHeight(area.window)) / 1e6;
      if (mp > MAX_WINDOW_MEGAPIXELS) throw new ImageDataError(`the cell needs a ${mp.toFixed(1)} MP window`);
      const data = await scl.read(area.window);
      megapixels = mp;
      const counts = { cloud: 0, shadow: 0, classified: 0, inside: 0 };
      for (let i = 0; i < data.length; i++) {
        if (area.inside[i] !== 1) continue;
        counts.inside++;
        const value = data[i]!;
        if (value === 0) continue; // no data: neither cloud nor clear
        counts.classified++;
        if ((SCL_CLOUD as readonly number[]).includes(value)) counts.cloud++;
        else if (value === SCL_CLOUD_SHADOW) counts.shadow++;
      }
      if (counts.classified === 0) reason = 'the scene has no classified pixel inside the cell';
      tally = counts;
      const summary = scl.summary();
      read = {
        band: 'scl',
        href: summary.href,
        sha256: summary.sha256,
        bytes_read: summary.bytesRead,
        requests: summary.requests,
        ranges: summary.ranges,
        crs: `EPSG:${scl.grid.epsg}`,
        window: area.window,
      };
    } catch (error) {
      // What failed and where goes to the logs only: the public answer must not describe the upstream.
      deps.onReadFailure?.((error as Error).message);
      reason = `reading the scl band failed: ${publicReadFailure(error)}`;
    }
  }
  const usable = tally !== null && tally.classified > 0;
  const cost = imageCost(megapixels);
  const result: CloudMaskResult = {
    sceneId: scene.id,
    datetime: scene.datetime,
    h3Cell: cell,
    cloudCover: scene.cloudCover,
    cellCloudCover: usable ? round2((100 * tally!.cloud) / tally!.classified) : null,
    cellCloudShadow: usable ? round2((100 * tally!.shadow) / tally!.classified) : null,
    method: usable ? 'pixels' : 'metadata',
    description: usable
      ? `Scene cloud cover from the catalog; the cell's cloud and shadow shares from ${tally!.classified} classified ` +
        `20 m scene-classification pixels (cloud = SCL 8, 9, 10; shadow = SCL 3).`
      : `Scene cloud cover from the catalog only: ${reason}.`,
    megapixels,
    cost,
    processingMs: Math.max(0, deps.clock() - started),
  };
  return {
    result,
    payload: {
      method: result.method,
      fallback_reason: usable ? null : reason,
      tallycounts: tally,
      assets: read ? [read] : [],
      megapixels,
      cost,
    },
  };
}
