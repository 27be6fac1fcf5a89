/**
 * Annotation of a tile with an inference step's places (docs/protocol.md §2.2 rule 2): which places can be put on the
 * tile and where, then markers and labels drawn as an SVG overlay composited by sharp.
 *
 * Positions are never invented: the protocol's inference locations (docs/protocol.md §2.3) carry only name and address, and a place
 * without coordinates or a valid cell is reported unplaced (`cell: null, pixel: null`). A place outside
 * the tile is reported with its cell but not drawn.
 */
import { cellToLatLng, getResolution, latLngToCell } from 'h3-js';
import sharp from 'sharp';
import { isCell } from '../../core/h3-cell.js';
import { pixelInTile, type TileXY } from '../../core/tile-coords.js';
import type { TileFormat } from '../../core/tile-request.js';
import { encodeAs } from './tile-format.js';

export interface TileLocation {
  name: string;
  address?: string | undefined;
  lat?: number | undefined;
  lng?: number | undefined;
  h3_cell?: string | undefined;
}

export type Unplaced = 'no_coordinates' | 'invalid_coordinates' | 'invalid_cell' | 'outside_tile';

export interface Annotation {
  name: string;
  address: string;
  /** The place's cell: as given, else its coordinates' cell at the tile step's cell resolution. */
  cell: string | null;
  /** Integer pixel in the tile image (origin top-left), or null when not drawn. */
  pixel: TileXY | null;
  placed: boolean;
  reason?: Unplaced;
}

const validLatLng = (lat: unknown, lng: unknown): lat is number =>
  typeof lat === 'number' &&
  typeof lng === 'number' &&
  Number.isFinite(lat) &&
  Number.isFinite(lng) &&
  Math.abs(lat) <= 90 &&
  Math.abs(lng) <= 180;

/** Where each location falls on tile (x, y, zoom) rendered `size` pixels wide. */
export function placeLocations(
  locations: readonly TileLocation[],
  tile: TileXY & { zoom: number },
  size: number,
  centerCell: string,
): Annotation[] {
  const resolution = getResolution(centerCell);
  return locations.map((loc) => {
    const base = { name: loc.name, address: loc.address ?? '' };
    const unplaced = (reason: Unplaced, cell: string | null = null): Annotation => ({
      ...base,
      cell,
      pixel: null,
      placed: false,
      reason,
    });
    const hasCoordinates = loc.lat !== undefined || loc.lng !== undefined;
    if (hasCoordinates && !validLatLng(loc.lat, loc.lng)) return unplaced('invalid_coordinates');
    if (loc.h3_cell !== undefined && !isCell(loc.h3_cell)) return unplaced('invalid_cell');
    let point: [number, number];
    let cell: string;
    if (hasCoordinates) {
      point = [loc.lat!, loc.lng!];
      cell = loc.h3_cell ?? latLngToCell(loc.lat!, loc.lng!, resolution);
    } else if (loc.h3_cell !== undefined) {
      cell = loc.h3_cell;
      point = cellToLatLng(cell);
    } else {
      return unplaced('no_coordinates');
    }
    const pixel = pixelInTile(point[0], point[1], tile, size);
    return pixel ? { ...base, cell, pixel, placed: true } : unplaced('outside_tile', cell);
  });
}

const XML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };
const MAX_LABEL_CHARS = 28;
// Labels come from model output: escape them, drop control characters (invalid in XML), keep them short
// enough to stay on a 256 px tile.
function label(text: string): string {
  const chars = [...text.trim()].map((c) => (c < ' ' || c === '\u007f' ? ' ' : c));
  const short = chars.length > MAX_LABEL_CHARS ? `${chars.slice(0, MAX_LABEL_CHARS - 1).join('')}…` : chars.join('');
  return short.replace(/[&<>"']/g, (c) => XML_ESCAPES[c]!);
}

/** The SVG overlay: a marker per placed annotation and its name beside it, scaled to the image width. */
export function overlaySvg(annotations: readonly Annotation[], width: number, height: number): string {
  const s = width / 256;
  const marks = annotations
    .filter((a) => a.pixel)
    .map(({ pixel, name }) => {
      const { x, y } = pixel!;
      const anchor = x > width * 0.6 ? 'end' : 'start';
      const tx = anchor === 'end' ? x - 9 * s : x + 9 * s;
      return (
        `<circle cx="${x + 0.5}" cy="${y + 0.5}" r="${6 * s}" fill="#d32f2f" stroke="#ffffff" stroke-width="${2 * s}"/>` +
        `<text x="${tx}" y="${y + 4 * s}" text-anchor="${anchor}" font-family="DejaVu Sans, sans-serif" ` +
        `font-size="${11 * s}" fill="#212121" stroke="#ffffff" stroke-width="${3 * s}" paint-order="stroke">` +
        `${label(name)}</text>`
      );
    });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">${marks.join('')}</svg>`;
}

/** Image width and height (tiles are 256 or 512 px square, but the upstream decides). */
export async function imageSize(bytes: Uint8Array): Promise<{ width: number; height: number }> {
  const { width, height } = await sharp(bytes).metadata();
  return { width: width ?? 256, height: height ?? 256 };
}

/** The tile with the overlay composited on it, encoded as `format`. */
export async function drawAnnotations(
  bytes: Uint8Array,
  format: TileFormat,
  annotations: readonly Annotation[],
  size: { width: number; height: number },
): Promise<Buffer> {
  const overlay = Buffer.from(overlaySvg(annotations, size.width, size.height));
  return encodeAs(sharp(bytes).composite([{ input: overlay, top: 0, left: 0 }]), format);
}
