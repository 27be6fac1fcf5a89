import assert from 'node:assert/strict';
import { leastCloudy, stacItemSchema, toScene, type Scene } from '../../../activities/imagery/stac-item.js';
import { sentinelItem } from '../../helpers/stac-server.js';

const scene = (id: string, datetime: string, properties: Record<string, unknown> = {}): Scene => {
  const result = toScene(stacItemSchema.parse(sentinelItem(id, datetime, { properties })));
  assert.ok(typeof result !== 'string', String(result));
  return result;
};

describe('imagery: STAC items as scenes', () => {
  it('reads Earth Search v1 fields: cloud cover, baseline, offset flag, class shares, bands', () => {
    const item = sentinelItem('S2A_X', '2026-02-10T10:00:00.123456Z', {
      properties: { 'eo:cloud_cover': 12.5, 's2:processing_baseline': '05.10', 's2:water_percentage': 3 },
      assets: { red: 'https://example.test/B04.tif', thumbnail: 'https://example.test/t.jpg', aot: 'x' },
    });
    const s = toScene(stacItemSchema.parse(item)) as Scene;
    assert.equal(s.datetime, '2026-02-10T10:00:00.123Z');
    assert.equal(s.cloudCover, 12.5);
    assert.equal(s.processingBaseline, '05.10');
    assert.equal(s.offsetAppliedByCatalog, false);
    assert.equal(s.classShares.water, 3);
    assert.equal(s.classShares.vegetation, null);
    assert.deepEqual(s.bands, { red: 'https://example.test/B04.tif' });
    assert.equal(s.thumbnail, 'https://example.test/t.jpg');
  });

  it('refuses an item without a usable datetime', () => {
    const item = stacItemSchema.parse(sentinelItem('S2A_X', 'soon'));
    assert.match(String(toScene(item)), /no valid datetime/);
  });

  it('chooses the least cloudy scene, the newest among equals, unknown cloud cover last', () => {
    const scenes = [
      scene('a', '2026-02-01T00:00:00Z', { 'eo:cloud_cover': 5 }),
      scene('b', '2026-02-03T00:00:00Z', { 'eo:cloud_cover': 5 }),
      scene('c', '2026-02-05T00:00:00Z', { 'eo:cloud_cover': null }),
      scene('d', '2026-02-04T00:00:00Z', { 'eo:cloud_cover': 20 }),
    ];
    assert.equal(leastCloudy(scenes)?.id, 'b');
    assert.equal(leastCloudy([scenes[2]!, scenes[3]!])?.id, 'd');
    assert.equal(leastCloudy([]), undefined);
  });
});
