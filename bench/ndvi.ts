import { readNdviPixels } from '../activities/imagery/ndvi-pixels.js';
import { originSet } from '../activities/safe-fetch.js';
import { BOA_ADD_OFFSET } from '../core/ndvi.js';
import { ROME_CELL, romeScene } from '../test/helpers/cog-fixture.js';
import { startStacServer } from '../test/helpers/stac-server.js';

/**
 * Pixel NDVI of one cell, end to end over loopback HTTP: COG header and tile range reads (red, nir, SCL),
 * decode, clip to the cell, cloud mask, statistics. The Rome cell (resolution 6) over a 15 m grid needs a
 * window of about 512×512 pixels; the median of 5 runs after a warm-up is reported.
 */
export async function benchNdvi(): Promise<{ ms: number; megapixels: number }> {
  const scene = romeScene({ pixelSize: 15, size: 640 });
  const server = await startStacServer();
  try {
    server.files.set('red.tif', scene.red);
    server.files.set('nir.tif', scene.nir);
    server.files.set('scl.tif', scene.scl);
    const assets = { red: server.fileUrl('red.tif'), nir: server.fileUrl('nir.tif'), scl: server.fileUrl('scl.tif') };
    const options = { timeoutMs: 30_000, userAgent: 'geofabric-bench', origins: originSet([server.url]) };
    const run = () => readNdviPixels(ROME_CELL, assets, BOA_ADD_OFFSET, options);
    const { grid } = await run(); // warm-up: JIT, sockets
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const start = performance.now();
      await run();
      times.push(performance.now() - start);
    }
    times.sort((a, b) => a - b);
    return { ms: times[2]!, megapixels: grid.megapixels };
  } finally {
    await server.close();
  }
}
