import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LRUCache } from 'lru-cache';
import sharp from 'sharp';
import type { TileTemplates } from '../activities/tiles/index.js';
import { DEMO_TILE_SIZE, demoTilePixels } from '../core/demo-tile.js';
import { sha256Hex } from '../core/hash.js';
import { MAX_ZOOM, TILE_STYLES, type TileStyle } from '../core/tile-styles.js';

/**
 * The demo tile upstream (DEMO=true, `geofabric demo-upstream`): a loopback XYZ server of synthetic PNG tiles
 * labelled on their face (core/demo-tile.ts), so a quickstart's `tile_render` step runs through the gateway's
 * normal fetch, cache and proof path with no internet. Never a default: `start` runs it only with DEMO=true,
 * which production refuses (bin/config.ts).
 */
export interface DemoUpstream {
  url: string;
  /** The TILE_URL_* template of each style. */
  templates: TileTemplates;
  /** What proof records name as the upstream: `demo-tiles@<host>`. */
  name: string;
  close(): Promise<void>;
}

const PATH = /^\/demo\/([a-z-]+)\/(\d{1,2})\/(\d{1,7})\/(\d{1,7})\.png$/;

export async function startDemoUpstream(options: { host?: string; port?: number } = {}): Promise<DemoUpstream> {
  const host = options.host ?? '127.0.0.1';
  // Encoding a tile takes a few ms; a demo asks for a handful, a browser panning a map for a few hundred.
  const tiles = new LRUCache<string, { png: Buffer; etag: string }>({ max: 1024 });

  async function tile(style: TileStyle, z: number, x: number, y: number) {
    const key = `${style}/${z}/${x}/${y}`;
    let found = tiles.get(key);
    if (!found) {
      const raw = demoTilePixels(style, z, x, y);
      const png = await sharp(raw, { raw: { width: DEMO_TILE_SIZE, height: DEMO_TILE_SIZE, channels: 3 } })
        .png()
        .toBuffer();
      found = { png, etag: `"${sha256Hex(png)}"` };
      tiles.set(key, found);
    }
    return found;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const match = PATH.exec(new URL(req.url ?? '/', 'http://demo').pathname);
    const [, style, z, x, y] = (match ?? []).map((v, i) => (i <= 1 ? v : Number(v))) as [
      unknown,
      string,
      number,
      number,
      number,
    ];
    const valid =
      match !== null &&
      (TILE_STYLES as readonly string[]).includes(style) &&
      z <= MAX_ZOOM &&
      x < 2 ** z &&
      y < 2 ** z &&
      (req.method === 'GET' || req.method === 'HEAD');
    if (!valid) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('demo tiles: GET /demo/{style}/{z}/{x}/{y}.png\n');
      return;
    }
    const { png, etag } = await tile(style as TileStyle, z, x, y);
    const headers = {
      etag,
      'cache-control': 'public, max-age=86400',
      'x-geofabric-demo': 'synthetic tile, not map data',
    };
    if (req.headers['if-none-match'] === etag) {
      res.writeHead(304, headers).end();
      return;
    }
    res.writeHead(200, { ...headers, 'content-type': 'image/png', 'content-length': png.length });
    res.end(req.method === 'HEAD' ? undefined : png);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`demo tiles: ${(error as Error).message}\n`);
    });
  });
  server.listen(options.port ?? 0, host);
  await once(server, 'listening');
  const address = server.address() as AddressInfo;
  const hostPort = `${host.includes(':') ? `[${host}]` : host}:${address.port}`;
  const url = `http://${hostPort}`;
  const templates = Object.fromEntries(
    TILE_STYLES.map((style) => [style, `${url}/demo/${style}/{z}/{x}/{y}.png`]),
  ) as TileTemplates;
  return {
    url,
    templates,
    name: `demo-tiles@${hostPort}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
