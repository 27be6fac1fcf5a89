/**
 * PNG results (docs/protocol.md §16.6): one band as grey, three as RGB, each with an alpha channel that hides
 * no-data; values rounded and clamped to 0–255 (openEO users scale first, e.g. with linear_scale_range).
 */
import sharp from 'sharp';
import { OpenEoError } from '../../core/openeo/errors.js';
import { rasterPlanes } from '../../core/openeo/output.js';

export async function encodePng(value: unknown): Promise<Uint8Array> {
  const raster = rasterPlanes(value, 'PNG');
  const bands = raster.planes.length;
  if (bands !== 1 && bands !== 3) {
    throw new OpenEoError(
      'FormatUnsuitable',
      `Data can't be transformed into the requested output format PNG: it takes 1 or 3 bands, not ${bands}`,
    );
  }
  const channels = (bands + 1) as 2 | 4;
  const size = raster.width * raster.height;
  const pixels = Buffer.alloc(size * channels);
  for (let i = 0; i < size; i++) {
    let valid = true;
    for (let b = 0; b < bands; b++) {
      const v = raster.planes[b]![i]!;
      if (!Number.isFinite(v)) valid = false;
      pixels[i * channels + b] = Number.isFinite(v) ? Math.min(255, Math.max(0, Math.round(v))) : 0;
    }
    pixels[i * channels + bands] = valid ? 255 : 0;
  }
  const image = sharp(pixels, { raw: { width: raster.width, height: raster.height, channels } });
  // Grey stays grey (sharp would write RGB otherwise).
  const png = await (bands === 1 ? image.toColourspace('b-w') : image).png().toBuffer();
  return new Uint8Array(png);
}
