import type { TileTemplates } from '../../activities/tiles/index.js';
import { DEFAULT_EPOCH_GENESIS_MS, EPOCH_MS } from '../../core/epoch.js';
import { startGateway } from './gateway.js';
import type { XyzServer } from './xyz-server.js';

/** Tile tests run in this epoch unless they advance the clock. */
export const TILE_TEST_EPOCH = 5000;

export interface TileResponse {
  status: number;
  headers: Headers;
  bytes: Buffer;
  json: { error?: string; detail?: string } | undefined;
}

/**
 * A gateway whose five styles point at the local XYZ server (satellite in Esri's z/y/x order, dark as
 * WebP) on a clock the test advances an epoch at a time. `tile` fetches as a browser does: raw bytes.
 */
export async function startTileGateway(
  xyz: XyzServer,
  tiles: { timeoutMs?: number; cacheBytes?: number; templates?: Partial<TileTemplates> } = {},
) {
  let now = DEFAULT_EPOCH_GENESIS_MS + TILE_TEST_EPOCH * EPOCH_MS + 60_000;
  const templates: TileTemplates = {
    'osm-bright': xyz.template('png'),
    'osm-standard': xyz.template('png'),
    dark: xyz.template('webp'),
    terrain: xyz.template('png'),
    satellite: xyz.template('jpg', 'zyx'),
    ...tiles.templates,
  };
  const gw = await startGateway({
    clock: () => now,
    tiles: {
      templates,
      timeoutMs: tiles.timeoutMs ?? 2000,
      ...(tiles.cacheBytes ? { cacheBytes: tiles.cacheBytes } : {}),
    },
  });
  const tile = async (path: string, headers: Record<string, string> = {}): Promise<TileResponse> => {
    const res = await fetch(gw.url + path, { headers });
    const bytes = Buffer.from(await res.arrayBuffer());
    const json = res.headers.get('content-type')?.startsWith('application/json')
      ? JSON.parse(bytes.toString())
      : undefined;
    return { status: res.status, headers: res.headers, bytes, json };
  };
  return { gw, tile, advanceEpoch: () => (now += EPOCH_MS) };
}
