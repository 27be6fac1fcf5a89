/**
 * The `tile_render` activity (docs/protocol.md §2.2): the tile of the step's centre cell, annotated with the places an
 * inference step found, plus the annotation metadata. It shares the HTTP path's cache (so it is priced as
 * a HIT or MISS alike) and writes one `tile/raster` record, awaited: an activity must not report success
 * before its record is durable. The record id comes from job and step, so a retry returns the stored
 * record (and its cost and cache status, which settlement already saw) instead of writing another.
 *
 * Results travel in Temporal payloads: the image rides along as base64 only when under 256 KiB; its
 * size, type and SHA-256 always do.
 */
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { ServiceError } from '../../core/errors.js';
import { isCell } from '../../core/h3-cell.js';
import { sha256Hex } from '../../core/hash.js';
import { tileCost } from '../../core/pricing.js';
import { TILE_CONTENT_TYPES, TILE_FORMATS, type TileFormat } from '../../core/tile-request.js';
import { MAX_ZOOM, TILE_STYLES, type TileStyle } from '../../core/tile-styles.js';
import type { ProofWriter } from '../proof/record-batcher.js';
import { drawAnnotations, imageSize, placeLocations, type Annotation } from './tile-annotate.js';
import { stepRecordId } from '../../core/proof-record.js';
import { TILE_WORKER, tileRenderPayloadSchema, type TileRenderPayload } from './tile-record.js';
import type { TileSource } from './tile-source.js';
import type { ServeEvent } from './tile-stats.js';

export const MAX_INLINE_IMAGE_BYTES = 256 * 1024;
export const MAX_LOCATIONS = 100;

const locationSchema = z.object({
  name: z.string().max(500),
  address: z.string().max(1000).optional(),
  lat: z.number().optional(),
  lng: z.number().optional(),
  h3_cell: z.string().max(32).optional(),
});

export const tileStepSchema = z.object({
  job_id: z.string().min(1).max(128),
  step_id: z.string().min(1).max(128),
  center_cell: z.string().refine(isCell, 'must be a valid H3 cell'),
  zoom: z.number().int().min(0).max(MAX_ZOOM),
  style: z.enum(TILE_STYLES),
  format: z.enum([...TILE_FORMATS, 'jpeg']).optional(),
  locations: z.array(locationSchema).max(MAX_LOCATIONS).optional(),
});

export type TileStep = z.input<typeof tileStepSchema>;

export interface TileRenderOutput {
  cell: string;
  zoom: number;
  style: TileStyle;
  x: number;
  y: number;
  format: TileFormat;
  content_type: string;
  /** Bytes of the annotated image. */
  size: number;
  /** SHA-256 hex of the annotated image (the record's sha256). */
  sha256: string;
  /** The annotated image, base64, when at most MAX_INLINE_IMAGE_BYTES; else null. */
  image_base64: string | null;
  /** SHA-256 of the plain tile underneath (the HTTP endpoint's X-Svc-Proof for this cell). */
  tile_sha256: string;
  annotations: Annotation[];
  cache: 'HIT' | 'MISS';
  cost: number;
  record_id: string;
  epoch: number;
}

export interface TileRendererDeps {
  source: TileSource;
  proofs: ProofWriter;
  count(epoch: number, style: TileStyle, event: ServeEvent): void;
}

export function createTileRenderer(deps: TileRendererDeps) {
  return async function renderTile(input: TileStep): Promise<TileRenderOutput> {
    const parsed = tileStepSchema.safeParse(input);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue?.path.join('.') || 'input';
      throw ApplicationFailure.nonRetryable(`${where}: ${issue?.message ?? 'invalid'}`, 'invalid_request');
    }
    const step = parsed.data;
    const format: TileFormat = step.format === 'jpeg' ? 'jpg' : (step.format ?? 'png');
    const request = { cell: step.center_cell, zoom: step.zoom, style: step.style, format };

    const epochAtStart = deps.proofs.epochNow();
    let found;
    try {
      found = await deps.source.lookup(request, epochAtStart);
    } catch (error) {
      deps.count(epochAtStart, step.style, { kind: 'error' });
      // Upstream trouble is transient: let Temporal's retry policy try again. No tile there (404) is not.
      if (error instanceof ServiceError) {
        const message = error.detail ?? error.code;
        if (error.status < 500) throw ApplicationFailure.nonRetryable(message, error.code);
        throw ApplicationFailure.retryable(message, error.code);
      }
      throw error;
    }
    const { tile } = found;
    const { x, y } = tile;
    const size = await imageSize(tile.bytes);
    const annotations = placeLocations(step.locations ?? [], { x, y, zoom: step.zoom }, size.width, step.center_cell);
    const image = annotations.some((a) => a.placed)
      ? await drawAnnotations(tile.bytes, format, annotations, size)
      : tile.bytes;
    const sha256 = image === tile.bytes ? tile.sha256 : sha256Hex(image);

    const payload: TileRenderPayload = {
      version: 1,
      kind: 'render',
      style: step.style,
      zoom: step.zoom,
      x,
      y,
      format,
      cache: found.cache,
      bytes: image.length,
      sha256,
      cost: tileCost(found.cache === 'HIT'),
      worker: TILE_WORKER,
      upstream_host: found.upstreamHost,
      job_id: step.job_id,
      step_id: step.step_id,
      tile_sha256: tile.sha256,
      annotations: annotations.map(({ name, cell, pixel }) => ({ name, cell, pixel })),
    };
    const record = await deps.proofs.write({
      id: stepRecordId('tile', step.job_id, step.step_id),
      h3_cell: step.center_cell,
      collection_type: 'tile',
      payload_type: 'tile/raster',
      payload,
    });
    // On a retry the store hands back the first attempt's record: report what it accounted.
    const stored = tileRenderPayloadSchema.safeParse(record.payload);
    const accounted = stored.success ? stored.data : payload;
    deps.count(record.address.epoch, step.style, {
      kind: 'serve',
      cache: accounted.cache,
      bytes: image.length,
      cost: accounted.cost,
    });

    return {
      cell: step.center_cell,
      zoom: step.zoom,
      style: step.style,
      x,
      y,
      format,
      content_type: TILE_CONTENT_TYPES[format],
      size: image.length,
      sha256,
      image_base64: image.length <= MAX_INLINE_IMAGE_BYTES ? image.toString('base64') : null,
      tile_sha256: tile.sha256,
      annotations,
      cache: accounted.cache,
      cost: accounted.cost,
      record_id: record.id,
      epoch: record.address.epoch,
    };
  };
}
