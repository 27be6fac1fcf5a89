import assert from 'node:assert/strict';
import sharp from 'sharp';
import { convertTile, detectFormat } from '../../../activities/tiles/tile-format.js';
import { ServiceError } from '../../../core/errors.js';

const solid = (alpha = 1) =>
  sharp({ create: { width: 8, height: 8, channels: 4, background: { r: 10, g: 120, b: 200, alpha } } });

describe('tile formats (magic bytes, conversion)', () => {
  it('recognises PNG, JPEG and WebP by their bytes, and nothing else', async () => {
    assert.equal(detectFormat(await solid().png().toBuffer()), 'png');
    assert.equal(detectFormat(await solid().jpeg().toBuffer()), 'jpg');
    assert.equal(detectFormat(await solid().webp().toBuffer()), 'webp');
    assert.equal(detectFormat(Buffer.from('<html>error</html>')), null);
    assert.equal(detectFormat(Buffer.from([0x89, 0x50])), null);
    assert.equal(detectFormat(Buffer.from('RIFF\0\0\0\0WAVE')), null);
  });

  it('converts to each format, and flattens transparency onto white for JPEG', async () => {
    const png = await solid(0).png().toBuffer();
    for (const to of ['png', 'jpg', 'webp'] as const) assert.equal(detectFormat(await convertTile(png, to)), to);
    const { data } = await sharp(await convertTile(png, 'jpg'))
      .raw()
      .toBuffer({ resolveWithObject: true });
    assert.ok(data[0]! > 240 && data[1]! > 240 && data[2]! > 240, `expected white, got ${[...data.subarray(0, 3)]}`);
  });

  it('reports undecodable bytes as the upstream’s failure', async () => {
    const broken = Buffer.concat([(await solid().png().toBuffer()).subarray(0, 40)]);
    await assert.rejects(
      convertTile(broken, 'jpg'),
      (e) => e instanceof ServiceError && e.code === 'upstream_unavailable',
    );
  });
});
