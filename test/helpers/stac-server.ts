/**
 * A local STAC API on an ephemeral port, speaking enough of the real protocol for the imagery tests:
 * `GET /` (landing page), `GET /collections/sentinel-2-l2a`, `POST /search` honouring collections, intersects (by bounding box), datetime
 * intervals, `query` on eo:cloud_cover, `sortby` and `limit`; and `GET /files/<name>` serving COG bytes
 * with HTTP Range support (206, Accept-Ranges, Content-Range), counting what it sends.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StacItemJson {
  type: 'Feature';
  stac_version: string;
  id: string;
  collection: string;
  bbox: [number, number, number, number];
  geometry: unknown;
  properties: Record<string, unknown>;
  assets: Record<string, { href: string; type?: string }>;
  links: unknown[];
}

export interface FileStats {
  rangeResponses: number;
  fullResponses: number;
  bytesSent: number;
}

export interface StacServer {
  url: string;
  /** Items the catalog holds; tests replace or push freely. */
  items: StacItemJson[];
  files: Map<string, Uint8Array>;
  fileUrl(name: string): string;
  /** `GET /files/<name>` answers 302 to the URL mapped here (a catalog redirecting its own assets). */
  redirects: Map<string, string>;
  /** Every POST /search body received, in order. */
  searches: Record<string, unknown>[];
  fileStats(name: string): FileStats;
  /** `GET /collections/sentinel-2-l2a`: the collection document (its extent feeds openEO's collection). */
  collection: Record<string, unknown>;
  /** Faults for /search: an HTTP status, a delay, or a body that is not a STAC response. */
  faults: { searchStatus?: number; searchDelayMs?: number; malformed?: 'not-json' | 'bad-shape' };
  close(): Promise<void>;
}

const ROME_BBOX: [number, number, number, number] = [12.0, 41.5, 13.0, 42.3];

/** An Earth Search v1 style Sentinel-2 L2A item; `properties` and `assets` override the defaults. */
export function sentinelItem(
  id: string,
  datetime: string,
  options: { properties?: Record<string, unknown>; assets?: Record<string, string>; bbox?: StacItemJson['bbox'] } = {},
): StacItemJson {
  const bbox = options.bbox ?? ROME_BBOX;
  const [w, s, e, n] = bbox;
  return {
    type: 'Feature',
    stac_version: '1.0.0',
    id,
    collection: 'sentinel-2-l2a',
    bbox,
    geometry: {
      type: 'Polygon',
      coordinates: [
        [
          [w, s],
          [e, s],
          [e, n],
          [w, n],
          [w, s],
        ],
      ],
    },
    properties: {
      datetime,
      platform: 'sentinel-2a',
      'eo:cloud_cover': 5,
      's2:processing_baseline': '05.10',
      'earthsearch:boa_offset_applied': false,
      ...options.properties,
    },
    assets: Object.fromEntries(
      Object.entries(options.assets ?? {}).map(([key, href]) => [key, { href, type: 'image/tiff' }]),
    ),
    links: [],
  };
}

function bboxOf(geometry: unknown): [number, number, number, number] | null {
  const coordinates = (geometry as { coordinates?: unknown })?.coordinates;
  if (!Array.isArray(coordinates)) return null;
  const points = (coordinates.flat(2) as number[]).reduce<number[][]>((acc, v, i) => {
    if (i % 2 === 0) acc.push([v]);
    else acc[acc.length - 1]!.push(v);
    return acc;
  }, []);
  const xs = points.map((p) => p[0]!);
  const ys = points.map((p) => p[1]!);
  return [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
}

const COMPARE: Record<string, (a: number, b: number) => boolean> = {
  lte: (a, b) => a <= b,
  lt: (a, b) => a < b,
  gte: (a, b) => a >= b,
  gt: (a, b) => a > b,
  eq: (a, b) => a === b,
};

function search(items: StacItemJson[], body: Record<string, unknown>): StacItemJson[] {
  const collections = body.collections as string[] | undefined;
  const box = bboxOf(body.intersects);
  const [from, to] = typeof body.datetime === 'string' ? body.datetime.split('/') : [];
  const query = (body.query ?? {}) as Record<string, Record<string, number>>;
  let found = items.filter((item) => {
    if (collections && !collections.includes(item.collection)) return false;
    if (box && (item.bbox[0] > box[2] || item.bbox[2] < box[0] || item.bbox[1] > box[3] || item.bbox[3] < box[1])) {
      return false;
    }
    const t = Date.parse(String(item.properties.datetime));
    if (from && from !== '..' && t < Date.parse(from)) return false;
    if (to && to !== '..' && t > Date.parse(to)) return false;
    return Object.entries(query).every(([field, ops]) =>
      Object.entries(ops).every(([op, v]) => {
        const value = item.properties[field];
        return typeof value === 'number' && (COMPARE[op]?.(value, v) ?? true);
      }),
    );
  });
  const sortby = (body.sortby as { field: string; direction: string }[] | undefined) ?? [];
  found = found.sort((a, b) => {
    for (const { field, direction } of sortby) {
      const key = field.replace(/^properties\./, '');
      const va = key === 'datetime' ? Date.parse(String(a.properties.datetime)) : Number(a.properties[key]);
      const vb = key === 'datetime' ? Date.parse(String(b.properties.datetime)) : Number(b.properties[key]);
      if (va !== vb) return (va < vb ? -1 : 1) * (direction === 'desc' ? -1 : 1);
    }
    return 0;
  });
  return found.slice(0, typeof body.limit === 'number' ? body.limit : 10);
}

function serveFile(req: IncomingMessage, res: ServerResponse, bytes: Uint8Array, stats: FileStats): void {
  res.setHeader('accept-ranges', 'bytes');
  res.setHeader('content-type', 'image/tiff');
  const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
  if (!range) {
    stats.fullResponses++;
    stats.bytesSent += bytes.length;
    res.end(Buffer.from(bytes));
    return;
  }
  const start = Number(range[1]);
  const end = Math.min(bytes.length - 1, range[2] ? Number(range[2]) : bytes.length - 1);
  if (start >= bytes.length || end < start) {
    res.writeHead(416, { 'content-range': `bytes */${bytes.length}` }).end();
    return;
  }
  stats.rangeResponses++;
  stats.bytesSent += end + 1 - start;
  res.writeHead(206, { 'content-range': `bytes ${start}-${end}/${bytes.length}` });
  res.end(Buffer.from(bytes.subarray(start, end + 1)));
}

export async function startStacServer(): Promise<StacServer> {
  const stats = new Map<string, FileStats>();
  const statsOf = (name: string) => {
    if (!stats.has(name)) stats.set(name, { rangeResponses: 0, fullResponses: 0, bytesSent: 0 });
    return stats.get(name)!;
  };
  const state = {
    items: [] as StacItemJson[],
    files: new Map<string, Uint8Array>(),
    redirects: new Map<string, string>(),
    searches: [] as Record<string, unknown>[],
    faults: {} as StacServer['faults'],
    collection: {
      type: 'Collection',
      stac_version: '1.0.0',
      id: 'sentinel-2-l2a',
      description: 'Test Sentinel-2 L2A',
      license: 'proprietary',
      extent: { spatial: { bbox: [[-180, -90, 180, 90]] }, temporal: { interval: [['2015-06-27T10:25:31Z', null]] } },
      links: [],
    } as Record<string, unknown>,
  };
  const server = createServer((req, res) => {
    void (async () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (req.method === 'GET' && path === '/') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ type: 'Catalog', id: 'test-stac', stac_version: '1.0.0', conformsTo: [], links: [] }));
      } else if (req.method === 'GET' && path.startsWith('/collections/')) {
        const id = decodeURIComponent(path.slice('/collections/'.length));
        if (id !== 'sentinel-2-l2a') return void res.writeHead(404).end('not found');
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(state.collection));
      } else if (req.method === 'POST' && path === '/search') {
        const chunks: Buffer[] = [];
        for await (const chunk of req) chunks.push(chunk as Buffer);
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
        state.searches.push(body);
        const { searchStatus, searchDelayMs, malformed } = state.faults;
        if (searchDelayMs) await new Promise((resolve) => setTimeout(resolve, searchDelayMs));
        if (searchStatus) return void res.writeHead(searchStatus).end('upstream trouble');
        res.setHeader('content-type', 'application/geo+json');
        if (malformed === 'not-json') return void res.end('<html>maintenance</html>');
        if (malformed === 'bad-shape')
          return void res.end(JSON.stringify({ type: 'FeatureCollection', features: [{ id: 7 }] }));
        const features = search(state.items, body);
        res.end(JSON.stringify({ type: 'FeatureCollection', features, numberReturned: features.length, links: [] }));
      } else if (req.method === 'GET' && path.startsWith('/files/')) {
        const name = decodeURIComponent(path.slice('/files/'.length));
        const location = state.redirects.get(name);
        if (location) return void res.writeHead(302, { location }).end();
        const bytes = state.files.get(name);
        if (!bytes) return void res.writeHead(404).end('not found');
        serveFile(req, res, bytes, statsOf(name));
      } else {
        res.writeHead(404).end('not found');
      }
    })().catch(() => {
      if (!res.headersSent) res.writeHead(400);
      res.end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    get items() {
      return state.items;
    },
    set items(items) {
      state.items = items;
    },
    files: state.files,
    get collection() {
      return state.collection;
    },
    set collection(collection) {
      state.collection = collection;
    },
    redirects: state.redirects,
    fileUrl: (name) => `${url}/files/${encodeURIComponent(name)}`,
    searches: state.searches,
    fileStats: statsOf,
    faults: state.faults,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
