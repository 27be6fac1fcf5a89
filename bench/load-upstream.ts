/**
 * The tile upstream of bench/load.ts: an XYZ server answering `/{z}/{x}/{y}.png` with a map-like 256 px PNG of
 * about 20 KB (flat land-use blocks, a road grid, slight noise; distinct per path), the size of a real street
 * tile. test/helpers/xyz-server.ts serves noise PNGs of ~180 KB, which inline into a compute job's answer and
 * job record as ~245 KB of base64: a load figure would then measure byte copying more than the gateway.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';

const SIZE = 256;
const COLOURS = [
  [232, 226, 214],
  [200, 225, 190],
  [170, 210, 230],
  [240, 220, 200],
  [220, 220, 220],
] as const;

async function mapTile(seed: string): Promise<Buffer> {
  const digest = createHash('sha256').update(seed).digest();
  let state = digest.readUInt32LE(0) || 1;
  const raw = Buffer.alloc(SIZE * SIZE * 3);
  for (let i = 0; i < SIZE * SIZE; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    const noise = (state >>> 0) % 2;
    const x = i % SIZE;
    const y = Math.floor(i / SIZE);
    const road = (x + digest[1]!) % 64 < 3 || (y + digest[2]!) % 48 < 3;
    const colour = road ? ([250, 250, 250] as const) : COLOURS[((x >> 5) * 7 + (y >> 5) * 13 + digest[3]!) % 5]!;
    raw[i * 3] = colour[0] - noise;
    raw[i * 3 + 1] = colour[1] - noise;
    raw[i * 3 + 2] = colour[2] - noise;
  }
  return sharp(raw, { raw: { width: SIZE, height: SIZE, channels: 3 } })
    .png()
    .toBuffer();
}

export interface TileUpstream {
  /** An XYZ template for TILE_URL_*. */
  template: string;
  /** Requests answered so far (a cache hit at the gateway never reaches here). */
  requests(): number;
  /** Mean size of the distinct tiles served so far (bytes). */
  meanBytes(): Promise<number>;
  close(): Promise<void>;
}

export async function startTileUpstream(): Promise<TileUpstream> {
  const tiles = new Map<string, Promise<Buffer>>();
  let requests = 0;
  const server = createServer((req, res) => {
    requests += 1;
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (!/^\/\d+\/\d+\/\d+\.png$/.test(path)) {
      res.writeHead(404).end();
      return;
    }
    let tile = tiles.get(path);
    if (!tile) tiles.set(path, (tile = mapTile(path)));
    tile.then(
      (bytes) => {
        const etag = `"${createHash('sha256').update(bytes).digest('hex').slice(0, 20)}"`;
        if (req.headers['if-none-match'] === etag) res.writeHead(304, { etag }).end();
        else res.writeHead(200, { 'content-type': 'image/png', etag }).end(bytes);
      },
      () => res.destroy(),
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    template: `http://127.0.0.1:${port}/{z}/{x}/{y}.png`,
    requests: () => requests,
    meanBytes: async () => {
      const sizes = (await Promise.all(tiles.values())).map((b) => b.length);
      return sizes.reduce((sum, n) => sum + n, 0) / Math.max(1, sizes.length);
    },
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
