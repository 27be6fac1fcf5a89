/**
 * `tile_render` steps (docs/protocol.md §1.2, §2.2): the cached raster tile of a cell, annotated with the places
 * the inference steps it depends on found.
 */
import { z } from 'zod';
import { pass } from '../check.js';
import { tileCost } from '../pricing.js';
import { MAX_ZOOM, MIN_ZOOM, TILE_STYLES } from '../tile-styles.js';
import { tileRenderRun } from './run/tile-render.js';
import { defineStepType } from './spec.js';

export { DEFAULT_TILE_STYLE, DEFAULT_TILE_ZOOM, type TileStepInput } from './run/tile-render.js';

export const tileRender = defineStepType({
  type: 'tile_render',
  fields: {
    center_cell: z.string().optional(),
    zoom: z.int().min(MIN_ZOOM).max(MAX_ZOOM).optional(),
    style: z.enum(TILE_STYLES).optional(),
  },
  check: () => null,
  minHardwareTier: 1,
  requiredTools: () => [],
  ...tileRenderRun,
  // Whether the tile is cached is known only when it is served: a miss.
  worstCase: () => pass({ hit: false }),
  price: ({ hit }: { hit: boolean }) => tileCost(hit),
  records: { collection: 'tile', payloadTypes: ['tile/raster'] },
  output: z
    .looseObject({
      cell: z.string(),
      zoom: z.int(),
      style: z.string(),
      x: z.int(),
      y: z.int(),
      format: z.string(),
      content_type: z.string(),
      size: z.int(),
      sha256: z.string(),
      tile_sha256: z.string(),
      image_base64: z.string().nullable(),
      annotations: z.array(z.looseObject({ name: z.string(), placed: z.boolean() })),
      cache: z.string(),
      cost: z.number(),
      record_id: z.string(),
      epoch: z.int(),
    })
    .describe('tile_render output'),
  docs: {
    runs: 'caching proxy of five public raster map styles, optionally annotated with places from an inference step',
    state: 'available',
  },
});
