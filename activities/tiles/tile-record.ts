/**
 * The payload of `tile/raster` proof records (docs/protocol.md §2.6: written after every tile render or cache serve),
 * version 1. `serves`: the HTTP answers (200 or 304) of one tile to one cell within one flush of the proof
 * writer, each listed with its request id, cache outcome and cost (one signature per tile and flush, not per
 * hit: see activities/proof/record-batcher.ts). `render`: one `tile_render` activity, carrying what was drawn. `sha256` is always the hash of the bytes handed out (X-Svc-Proof), so a client holding a tile
 * can find its record and a verifier can recompute it. The upstream is named by host only.
 */
import { z } from 'zod';
import { TILE_FORMATS } from '../../core/tile-request.js';
import { MAX_ZOOM, TILE_STYLES } from '../../core/tile-styles.js';

export const TILE_WORKER = 'tile-proxy';

const hex64 = z.string().regex(/^[0-9a-f]{64}$/);
const pixel = z.strictObject({ x: z.number().int().nonnegative(), y: z.number().int().nonnegative() });

const tile = {
  version: z.literal(1),
  style: z.enum(TILE_STYLES),
  zoom: z.number().int().min(0).max(MAX_ZOOM),
  x: z.number().int().nonnegative(),
  y: z.number().int().nonnegative(),
  format: z.enum(TILE_FORMATS),
  /** Size of the tile identified by sha256 (also for a 304, which sent no body). */
  bytes: z.number().int().nonnegative(),
  sha256: hex64,
  worker: z.literal(TILE_WORKER),
  upstream_host: z.string(),
};
const cache = z.enum(['HIT', 'MISS']);
const cost = z.number().nonnegative();

/** One HTTP answer within a `serves` record. */
export const tileServeSchema = z.strictObject({
  request_id: z.string(),
  cache,
  status: z.union([z.literal(200), z.literal(304)]),
  cost,
});

/** What the route opens an aggregate with; the proof writer adds the serve list and its bounds. */
export const tileServesHeadSchema = z.strictObject({ ...tile, kind: z.literal('serves') });

export const tileServesPayloadSchema = tileServesHeadSchema.extend({
  serve_count: z.number().int().positive(),
  first_served_at: z.iso.datetime(),
  last_served_at: z.iso.datetime(),
  serves: z.array(tileServeSchema).min(1),
});

export const tileRenderPayloadSchema = z.strictObject({
  ...tile,
  cache,
  cost,
  kind: z.literal('render'),
  job_id: z.string(),
  step_id: z.string(),
  /** The plain tile the annotations were drawn on. */
  tile_sha256: hex64,
  annotations: z.array(z.strictObject({ name: z.string(), cell: z.string().nullable(), pixel: pixel.nullable() })),
});

export const tilePayloadSchema = z.discriminatedUnion('kind', [tileServesPayloadSchema, tileRenderPayloadSchema]);

export type TileServesHead = z.infer<typeof tileServesHeadSchema>;
export type TileServe = z.infer<typeof tileServeSchema>;
export type TileRenderPayload = z.infer<typeof tileRenderPayloadSchema>;
