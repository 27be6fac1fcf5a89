/**
 * The bytes a client is sent are always in the format it asked for (decided):
 *
 * - The upstream's format is read from the bytes' magic numbers, never from its `content-type`: public
 *   servers mislabel (docs/protocol.md §2.4 observed `image/jpeg` under a `.png` path) and an error page served with
 *   200 must not reach a client as an image.
 * - When the upstream format differs from the requested one, sharp converts the cached upstream copy once
 *   per format; the cache keeps the converted bytes beside it, so a hit never converts.
 * - `content-type` always names the true format of the bytes sent.
 * - Every upstream tile is decoded once when fetched, before it is cached: a PNG or JPEG cut short or corrupt
 *   in its body still starts with its magic number, and must not be cached and served as the tile.
 */
import sharp, { type Sharp } from 'sharp';
import { ServiceError } from '../../core/errors.js';
import type { TileFormat } from '../../core/tile-request.js';

const startsWith = (bytes: Uint8Array, signature: readonly number[], offset = 0) =>
  bytes.length >= offset + signature.length && signature.every((b, i) => bytes[offset + i] === b);

/** The image format of `bytes` by magic number, or null for anything else (HTML, JSON, truncated data). */
export function detectFormat(bytes: Uint8Array): TileFormat | null {
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png';
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'jpg';
  // RIFF....WEBP
  if (startsWith(bytes, [0x52, 0x49, 0x46, 0x46]) && startsWith(bytes, [0x57, 0x45, 0x42, 0x50], 8)) return 'webp';
  return null;
}

/**
 * Encodes a sharp pipeline as `format`. JPEG has no alpha: transparent areas (e.g. a labels-only PNG
 * layer) become white, as a map background, rather than libvips' default black.
 */
export function encodeAs(image: Sharp, format: TileFormat): Promise<Buffer> {
  switch (format) {
    case 'png':
      return image.png().toBuffer();
    case 'jpg':
      return image.flatten({ background: '#ffffff' }).jpeg({ quality: 85, mozjpeg: true }).toBuffer();
    case 'webp':
      return image.webp({ quality: 85 }).toBuffer();
  }
}

/** Decoding upstream bytes: truncated or corrupt data is an error, and so is an image too large to be a tile. */
const decodeOptions = { failOn: 'error', limitInputPixels: 4096 * 4096 } as const;
const undecodable = () =>
  new ServiceError('upstream_unavailable', 'the upstream tile could not be decoded as an image');

/** Re-encodes an upstream tile (once per format). Undecodable bytes are the upstream's failure. */
export async function convertTile(bytes: Uint8Array, to: TileFormat): Promise<Buffer> {
  try {
    return await encodeAs(sharp(bytes, decodeOptions), to);
  } catch {
    throw undecodable();
  }
}

/**
 * Decodes an upstream tile when fetched, to know it is whole (miss path only: about a millisecond
 * for a 256 px tile). Undecodable bytes are the upstream's failure, as in convertTile.
 */
export async function verifyTile(bytes: Uint8Array): Promise<void> {
  try {
    await sharp(bytes, decodeOptions).raw().toBuffer();
  } catch {
    throw undecodable();
  }
}
