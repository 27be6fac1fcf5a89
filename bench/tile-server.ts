// The tile bench's server process: a local XYZ upstream, the gateway proxying it (proof records on, SQLite WAL
// file store as `npm start` uses), and a bare Koa app answering the same response: the same bytes under the same
// docs/protocol.md §2.4 headers (fixed values), so the load generator parses the same answer from both and the difference
// is the gateway's work (request context, routing, gates, cache lookup, proof records). Prints the two ports, and
// on SIGTERM the number of serves its tile records list.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Koa from 'koa';
import sharp from 'sharp';
import { openSqlite } from '../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../store/sqlite/proof-store.js';
import { TILE_STYLES } from '../core/tile-styles.js';
import { startGateway } from '../test/helpers/gateway.js';

const tile = await sharp({ create: { width: 256, height: 256, channels: 3, background: '#3a7d44' } })
  .png()
  .toBuffer();

const upstream = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'image/png', etag: '"v1"' });
  res.end(tile);
}).listen(0, '127.0.0.1');
await once(upstream, 'listening');
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;

const dataDir = mkdtempSync(join(tmpdir(), 'geofabric-bench-tiles-'));
const db = openSqlite(join(dataDir, 'proofs.db'));
const gateway = await startGateway({
  proofs: createSqliteProofStore(db),
  tiles: {
    templates: Object.fromEntries(TILE_STYLES.map((s) => [s, `${upstreamUrl}/${s}/{z}/{x}/{y}.png`])) as never,
  },
});

const bare = new Koa();
const sameHeaders = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers':
    'X-Svc-Worker, X-Svc-Cell, X-Svc-Epoch, X-Svc-Proof, X-Svc-Cache, X-Svc-Cost, X-Svc-Record, ETag',
  'x-request-id': '5f0c4f0e-3a51-4c8e-9a53-0c1d2e3f4a5b',
  'cache-control': 'public, max-age=3600',
  etag: `"${'a'.repeat(64)}"`,
  'x-svc-worker': 'tile-proxy',
  'x-svc-cell': '881e805003fffff',
  'x-svc-epoch': '7800',
  'x-svc-proof': 'a'.repeat(64),
  'x-svc-cache': 'HIT',
  'x-svc-cost': '0.00001',
  'x-svc-record': 'tile:5f0c4f0e-3a51-4c8e-9a53-0c1d2e3f4a5b',
  'x-content-type-options': 'nosniff',
};
bare.use((ctx) => {
  ctx.set(sameHeaders);
  ctx.type = 'image/png';
  ctx.body = tile;
});
const bareServer = bare.listen(0, '127.0.0.1');
await once(bareServer, 'listening');

process.stdout.write(`${new URL(gateway.url).port} ${(bareServer.address() as AddressInfo).port}\n`);
// On SIGTERM: close (the proof writer flushes), then print how many serves the tile records list, so the bench
// can check every answered hit was recorded.
process.on('SIGTERM', () => {
  void gateway.close().then(async () => {
    const store = createSqliteProofStore(db);
    let serves = 0;
    let cursor: string | undefined;
    do {
      const page = await store.queryRecords({ collection: 'tile', limit: 1000, ...(cursor ? { cursor } : {}) });
      for (const record of page.records) serves += (record.payload as { serve_count?: number }).serve_count ?? 0;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    process.stderr.write(serves === 0 ? 'no tile records were written\n' : '');
    db.close();
    rmSync(dataDir, { recursive: true, force: true });
    process.stdout.write(`serves ${serves}\n`, () => process.exit(0));
  });
});
