import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';
import { gridDisk, latLngToCell } from 'h3-js';
import sharp from 'sharp';
import { createRecordBatcher, type ProofWriter } from '../../../activities/proof/record-batcher.js';
import { createTileActivities, type TileActivities } from '../../../activities/tiles/index.js';
import { detectFormat } from '../../../activities/tiles/tile-format.js';
import { DEFAULT_EPOCH_GENESIS_MS, EPOCH_MS } from '../../../core/epoch.js';
import { sha256Hex } from '../../../core/hash.js';
import { generateKeyPair } from '../../../core/identity.js';
import { cellTile } from '../../../core/tile-coords.js';
import { TILE_STYLES } from '../../../core/tile-styles.js';
import { openSqlite } from '../../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../../store/sqlite/proof-store.js';
import type { ProofStore } from '../../../store/proof-store.js';
import { startXyzServer, type XyzServer } from '../../helpers/xyz-server.js';

const COLOSSEUM = { lat: 41.8902, lng: 12.4922 };
const CENTER = latLngToCell(COLOSSEUM.lat, COLOSSEUM.lng, 9);
const ZOOM = 13;
const PIAZZA_VENEZIA_CELL = latLngToCell(41.8955, 12.4823, 10);

const step = (overrides: Record<string, unknown> = {}) => ({
  job_id: '7d4f6c1e-2a9b-4a53-9e0e-3f1a2b3c4d5e',
  step_id: 'map',
  center_cell: CENTER,
  zoom: ZOOM,
  style: 'osm-bright' as const,
  locations: [
    { name: 'Colosseo', address: 'Piazza del Colosseo, Roma', ...COLOSSEUM },
    { name: 'Piazza Venezia', address: 'Roma', h3_cell: PIAZZA_VENEZIA_CELL },
    { name: 'Trattoria da Enzo', address: 'Via dei Vascellari 29, Roma' },
    { name: 'Duomo di Milano', address: 'Milano', lat: 45.4642, lng: 9.19 },
  ],
  ...overrides,
});

const raw = async (bytes: Buffer) => sharp(bytes).removeAlpha().raw().toBuffer({ resolveWithObject: true });

describe('tile_render activity (renderTile)', () => {
  let xyz: XyzServer;
  let store: ProofStore;
  let writer: ProofWriter;
  let tiles: TileActivities;

  beforeEach(async () => {
    xyz = await startXyzServer();
    store = createSqliteProofStore(openSqlite(':memory:'));
    const clock = () => DEFAULT_EPOCH_GENESIS_MS + 4000 * EPOCH_MS + 1000;
    writer = createRecordBatcher({ store, signer: generateKeyPair(), clock, genesisMs: DEFAULT_EPOCH_GENESIS_MS });
    const templates = Object.fromEntries(TILE_STYLES.map((s) => [s, xyz.template('png')])) as Record<string, string>;
    tiles = createTileActivities({
      config: { templates: templates as never, timeoutMs: 1000, cacheBytes: 8 * 1024 * 1024, userAgent: 'test' },
      proofs: writer,
      clock,
    });
  });
  afterEach(async () => {
    await writer.close();
    await xyz.close();
  });

  it('places located places on the tile, reports the others, and draws the markers', async () => {
    const { x, y } = cellTile(CENTER, ZOOM);
    const out = await tiles.renderTile(step());
    assert.deepEqual(
      [out.cell, out.zoom, out.style, out.x, out.y, out.format],
      [CENTER, ZOOM, 'osm-bright', x, y, 'png'],
    );
    const [colosseo, venezia, enzo, duomo] = out.annotations;
    for (const placed of [colosseo!, venezia!]) {
      assert.equal(placed.placed, true, placed.name);
      assert.ok(placed.pixel!.x >= 0 && placed.pixel!.x < 256 && placed.pixel!.y >= 0 && placed.pixel!.y < 256);
    }
    assert.equal(colosseo!.cell, CENTER);
    assert.equal(venezia!.cell, PIAZZA_VENEZIA_CELL);
    assert.deepEqual(enzo, {
      name: 'Trattoria da Enzo',
      address: 'Via dei Vascellari 29, Roma',
      cell: null,
      pixel: null,
      placed: false,
      reason: 'no_coordinates',
    });
    assert.equal(duomo!.placed, false);
    assert.equal(duomo!.pixel, null);
    assert.equal(duomo!.reason, 'outside_tile');

    const image = Buffer.from(out.image_base64!, 'base64');
    assert.equal(detectFormat(image), 'png');
    assert.equal(out.content_type, 'image/png');
    assert.equal(out.size, image.length);
    assert.equal(out.sha256, sha256Hex(image));
    const plain = await xyz.bytesAt(`/png/${ZOOM}/${x}/${y}`);
    assert.equal(out.tile_sha256, sha256Hex(plain));
    const [drawn, before] = [await raw(image), await raw(plain)];
    const at = (img: { data: Buffer }, p: { x: number; y: number }) => [
      ...img.data.subarray((p.y * 256 + p.x) * 3, (p.y * 256 + p.x) * 3 + 3),
    ];
    assert.notDeepEqual(
      at(drawn, colosseo!.pixel!),
      at(before, colosseo!.pixel!),
      'a marker covers the Colosseo pixel',
    );
    assert.notDeepEqual(at(drawn, venezia!.pixel!), at(before, venezia!.pixel!));
  });

  it('writes exactly one durable record per job step, however often it runs', async () => {
    const first = await tiles.renderTile(step());
    const second = await tiles.renderTile(step());
    assert.equal(first.record_id, second.record_id);
    assert.equal(first.record_id, `tile:${step().job_id}:map`);
    assert.deepEqual([first.cache, first.cost], ['MISS', 0.0001]);
    assert.deepEqual([second.cache, second.cost], ['MISS', 0.0001], 'a retry reports what the record accounted');
    const { records } = await store.queryRecords({ collection: 'tile', limit: 100 });
    assert.equal(records.length, 1);
    const payload = records[0]!.payload as Record<string, unknown>;
    assert.equal(records[0]!.payload_type, 'tile/raster');
    assert.equal(records[0]!.address.h3_cell, CENTER);
    assert.equal(payload.sha256, first.sha256);
    assert.equal(payload.job_id, step().job_id);
    assert.equal(payload.worker, 'tile-proxy');
    assert.equal(xyz.count(), 1, 'the second run was a cache hit');
  });

  it('returns the plain tile when nothing can be placed, in the format asked for', async () => {
    const out = await tiles.renderTile(
      step({ locations: [{ name: 'Somewhere', address: 'unknown' }], format: 'jpeg' }),
    );
    assert.equal(out.format, 'jpg');
    assert.equal(out.content_type, 'image/jpeg');
    assert.equal(detectFormat(Buffer.from(out.image_base64!, 'base64')), 'jpg');
    assert.equal(out.sha256, out.tile_sha256);
  });

  it('refuses bad input for good and upstream trouble for a retry', async () => {
    await assert.rejects(
      tiles.renderTile(step({ zoom: 21 })),
      (e) => e instanceof ApplicationFailure && e.nonRetryable && e.type === 'invalid_request',
    );
    await assert.rejects(
      tiles.renderTile(step({ center_cell: 'nope' })),
      (e) => e instanceof ApplicationFailure && e.nonRetryable,
    );
    xyz.failWith = 500;
    await assert.rejects(
      tiles.renderTile(step()),
      (e) => e instanceof ApplicationFailure && !e.nonRetryable && e.type === 'upstream_unavailable',
    );
    xyz.failWith = 404;
    await assert.rejects(
      tiles.renderTile(step()),
      (e) => e instanceof ApplicationFailure && e.nonRetryable && e.type === 'tile_not_found',
      'no tile there: retrying will not make one',
    );
    assert.equal((await store.queryRecords({ collection: 'tile', limit: 10 })).records.length, 0);
  });

  it('annotates the upstream tile another cell of the same tile already fetched, in any format', async () => {
    const served = await tiles.lookupTile({ cell: CENTER, zoom: ZOOM, style: 'osm-bright', format: 'png' });
    assert.equal(xyz.count(), 1);
    const { x, y } = cellTile(CENTER, ZOOM);
    const other = gridDisk(CENTER, 1).find((c) => {
      const t = cellTile(c, ZOOM);
      return c !== CENTER && t.x === x && t.y === y;
    })!;
    assert.ok(other, 'a neighbour in the same tile');
    const plain = await tiles.renderTile(step({ center_cell: other, locations: [] }));
    assert.equal(plain.cache, 'HIT');
    assert.equal(plain.tile_sha256, served.tile.sha256);
    const webp = await tiles.renderTile(step({ step_id: 'map-webp', format: 'webp' }));
    assert.equal(webp.format, 'webp');
    assert.equal(webp.cache, 'HIT');
    assert.equal(xyz.count(), 1, 'one upstream fetch for every cell and format of the tile');
  });
});
