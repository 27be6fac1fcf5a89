import assert from 'node:assert/strict';
import {
  checkGeoJson,
  checkPayloadGeometry,
  findGeoJson,
  MAX_EDGE_PAIRS,
  MAX_PAYLOAD_DEPTH,
  MAX_POSITIONS,
} from '../../core/geometry.js';

const square = (x: number, y: number, size: number): number[][] => [
  [x, y],
  [x + size, y],
  [x + size, y + size],
  [x, y + size],
  [x, y],
];

const polygon = (...rings: number[][][]) => ({ type: 'Polygon', coordinates: rings });

/** Asserts an invalid_geometry failure whose detail starts with `path` and mentions `reason`. */
function assertRejected(value: unknown, path: string, reason: RegExp): void {
  const result = checkGeoJson(value);
  assert.equal(result.ok, false, `expected a rejection at ${path}`);
  if (result.ok) return;
  assert.equal(result.error, 'invalid_geometry');
  assert.ok(result.detail.startsWith(`${path}: `), `detail "${result.detail}" should name ${path}`);
  assert.match(result.detail, reason);
}

describe('GeoJSON checks (gate 4)', () => {
  describe('accepts valid GeoJSON', () => {
    const valid: Record<string, unknown> = {
      point: { type: 'Point', coordinates: [12.4964, 41.9028] },
      'point with altitude': { type: 'Point', coordinates: [12.4964, 41.9028, 21] },
      'point on the antimeridian and pole': { type: 'Point', coordinates: [-180, 90] },
      'multi point': {
        type: 'MultiPoint',
        coordinates: [
          [0, 0],
          [1, 1],
        ],
      },
      'empty multi point': { type: 'MultiPoint', coordinates: [] },
      line: {
        type: 'LineString',
        coordinates: [
          [12.49, 41.9],
          [12.5, 41.91],
          [12.51, 41.9],
        ],
      },
      'multi line': {
        type: 'MultiLineString',
        coordinates: [
          [
            [0, 0],
            [1, 1],
          ],
          [
            [2, 2],
            [3, 3],
          ],
        ],
      },
      'polygon with a hole': polygon(square(0, 0, 10), square(2, 2, 3)),
      'hole touching the exterior at one point': polygon(square(0, 0, 10), [
        [0, 5],
        [3, 4],
        [3, 6],
        [0, 5],
      ]),
      'polygon with a repeated position': polygon([
        [0, 0],
        [10, 0],
        [10, 0],
        [10, 10],
        [0, 10],
        [0, 0],
      ]),
      'concave polygon': polygon([
        [0, 0],
        [10, 0],
        [10, 10],
        [5, 2],
        [0, 10],
        [0, 0],
      ]),
      'multi polygon': {
        type: 'MultiPolygon',
        coordinates: [[square(0, 0, 1)], [square(5, 5, 1), square(5.2, 5.2, 0.2)]],
      },
      'geometry collection': {
        type: 'GeometryCollection',
        geometries: [{ type: 'Point', coordinates: [0, 0] }, polygon(square(0, 0, 1))],
      },
      'feature with null geometry': { type: 'Feature', geometry: null, properties: null },
      'feature collection': {
        type: 'FeatureCollection',
        bbox: [0, 0, 10, 10],
        features: [
          { type: 'Feature', id: 'a', geometry: { type: 'Point', coordinates: [1, 1] }, properties: { name: 'a' } },
          { type: 'Feature', id: 2, geometry: polygon(square(0, 0, 10)), properties: {} },
        ],
      },
      '3D bbox': { type: 'Point', bbox: [1, 1, 0, 1, 1, 5], coordinates: [1, 1, 2] },
      'bbox across the antimeridian': {
        type: 'LineString',
        bbox: [170, -10, -170, 10],
        coordinates: [
          [170, 0],
          [-170, 0],
        ],
      },
    };
    for (const [name, value] of Object.entries(valid)) {
      it(name, () => assert.deepEqual(checkGeoJson(value), { ok: true, value: undefined }));
    }
  });

  describe('rejects', () => {
    it('an open ring', () => {
      assertRejected(
        polygon([
          [0, 0],
          [1, 0],
          [1, 1],
          [0, 1],
        ]),
        '$.coordinates[0]',
        /not closed/,
      );
    });

    it('a ring with too few positions', () => {
      assertRejected(
        polygon([
          [0, 0],
          [1, 0],
          [0, 0],
        ]),
        '$.coordinates[0]',
        /at least 4 positions, not 3/,
      );
    });

    it('a degenerate ring of fewer than 3 distinct positions', () => {
      assertRejected(
        polygon([
          [0, 0],
          [1, 0],
          [1, 0],
          [0, 0],
        ]),
        '$.coordinates[0]',
        /degenerate/,
      );
    });

    it('a line with one position', () => {
      assertRejected({ type: 'LineString', coordinates: [[0, 0]] }, '$.coordinates', /at least 2 positions/);
    });

    it('a bowtie (self-intersecting ring)', () => {
      assertRejected(
        polygon([
          [0, 0],
          [10, 10],
          [10, 0],
          [0, 10],
          [0, 0],
        ]),
        '$.coordinates[0]',
        /self-intersects/,
      );
    });

    it('a ring that touches itself at a vertex', () => {
      const figureEight = [
        [0, 0],
        [2, 0],
        [1, 1],
        [2, 2],
        [0, 2],
        [1, 1],
        [0, 0],
      ];
      assertRejected(polygon(figureEight), '$.coordinates[0]', /self-intersects/);
    });

    it('a ring whose non-adjacent edges overlap along a line', () => {
      const overlapping = [
        [0, 0],
        [4, 0],
        [4, 2],
        [3, 0],
        [1, 0],
        [0, 2],
        [0, 0],
      ];
      assertRejected(polygon(overlapping), '$.coordinates[0]', /self-intersects/);
    });

    it('a spike that runs back along its own edge', () => {
      assertRejected(
        polygon([
          [0, 0],
          [10, 0],
          [10, 10],
          [10, 5],
          [0, 0],
        ]),
        '$.coordinates[0]',
        /self-intersects/,
      );
    });

    it('a ring folded flat (collinear positions, no area)', () => {
      assertRejected(
        polygon([
          [0, 0],
          [1, 1],
          [2, 2],
          [0, 0],
        ]),
        '$.coordinates[0]',
        /folds back/,
      );
    });

    it('a hole crossing the exterior ring', () => {
      assertRejected(polygon(square(0, 0, 10), square(8, 8, 4)), '$.coordinates[1]', /ring 1 crosses ring 0/);
    });

    it('a hole sharing an edge with the exterior ring', () => {
      assertRejected(polygon(square(0, 0, 10), square(0, 2, 2)), '$.coordinates[1]', /crosses/);
    });

    it('a hole outside the exterior ring', () => {
      assertRejected(polygon(square(0, 0, 10), square(20, 20, 1)), '$.coordinates[1]', /outside the exterior/);
    });

    it('two holes crossing each other', () => {
      assertRejected(
        polygon(square(0, 0, 10), square(1, 1, 3), square(2, 2, 3)),
        '$.coordinates[2]',
        /ring 2 crosses ring 1/,
      );
    });

    it('latitude 91', () => {
      assertRejected(
        { type: 'Point', coordinates: [12, 91] },
        '$.coordinates[1]',
        /latitude 91 is outside \[-90, 90\]/,
      );
    });

    it('longitude -181', () => {
      const line = {
        type: 'LineString',
        coordinates: [
          [0, 0],
          [-181, 0],
        ],
      };
      assertRejected(line, '$.coordinates[1][0]', /longitude -181 is outside \[-180, 180\]/);
    });

    it('a coordinate that is not a number (what NaN becomes in JSON)', () => {
      assertRejected({ type: 'Point', coordinates: [null, 1] }, '$.coordinates[0]', /null is not a finite number/);
      assertRejected({ type: 'Point', coordinates: ['12.5', 1] }, '$.coordinates[0]', /"12.5" is not a finite number/);
      assertRejected({ type: 'Point', coordinates: [Number.NaN, 1] }, '$.coordinates[0]', /NaN is not a finite number/);
    });

    it('a position of the wrong arity', () => {
      assertRejected({ type: 'Point', coordinates: [1] }, '$.coordinates', /2 or 3 numbers, not 1/);
      assertRejected(
        {
          type: 'MultiPoint',
          coordinates: [
            [0, 0],
            [1, 2, 3, 4],
          ],
        },
        '$.coordinates[1]',
        /not 4/,
      );
      assertRejected({ type: 'Point', coordinates: { lng: 1, lat: 2 } }, '$.coordinates', /array of 2 or 3 numbers/);
    });

    it('an unknown geometry type inside a collection', () => {
      const collection = {
        type: 'GeometryCollection',
        geometries: [{ type: 'Point', coordinates: [0, 0] }, { type: 'Circle' }],
      };
      assertRejected(collection, '$.geometries[1].type', /"Circle" is not a GeoJSON geometry type/);
    });

    it('a Feature where a geometry belongs', () => {
      const collection = { type: 'GeometryCollection', geometries: [{ type: 'Feature', geometry: null }] };
      assertRejected(collection, '$.geometries[0].type', /not a GeoJSON geometry type/);
    });

    it('a FeatureCollection member that is not a Feature', () => {
      const collection = { type: 'FeatureCollection', features: [{ type: 'Point', coordinates: [0, 0] }] };
      assertRejected(collection, '$.features[0]', /must be a Feature/);
    });

    it('a Feature without a geometry member', () => {
      assertRejected({ type: 'Feature', properties: {} }, '$', /"geometry" member/);
    });

    it('a bad bbox', () => {
      const point = (bbox: unknown) => ({ type: 'Point', bbox, coordinates: [0, 0] });
      assertRejected(point([0, 0, 1]), '$.bbox', /4 or 6 numbers/);
      assertRejected(point([0, 0, 1, 1, 2]), '$.bbox', /4 or 6 numbers/);
      assertRejected(point('0,0,1,1'), '$.bbox', /4 or 6 numbers/);
      assertRejected(point([0, 0, 'x', 1]), '$.bbox[2]', /not a finite number/);
      assertRejected(point([0, 10, 1, 5]), '$.bbox', /south 10 is north of north 5/);
      assertRejected(point([0, 0, 200, 1]), '$.bbox', /longitudes/);
    });

    it('nesting deeper than the cap', () => {
      let geometry: object = { type: 'Point', coordinates: [0, 0] };
      for (let i = 0; i < 10; i++) geometry = { type: 'GeometryCollection', geometries: [geometry] };
      const result = checkGeoJson(geometry);
      assert.ok(!result.ok && /nests deeper/.test(result.detail));
    });

    it('more positions than the cap, naming where the cap was reached', () => {
      const coordinates = Array.from({ length: MAX_POSITIONS + 1 }, (_, i) => [(i % 360) - 180, 0]);
      assertRejected(
        { type: 'MultiPoint', coordinates },
        `$.coordinates[${MAX_POSITIONS}]`,
        new RegExp(`more than ${MAX_POSITIONS} positions`),
      );
    });

    it('a polygon too complex to check within the edge-pair budget', () => {
      // A star whose spokes all meet near the centre: every pair of edges has overlapping extents.
      const n = 4000;
      const star = Array.from({ length: n }, (_, i) => {
        const r = i % 2 ? 80 : 0.001;
        const a = (2 * Math.PI * i) / n;
        return [Math.cos(a) * r, Math.sin(a) * r];
      });
      star.push(star[0]!);
      assert.ok((n * n) / 4 > MAX_EDGE_PAIRS);
      assertRejected(polygon(star), '$.coordinates', /too complex to check/);
    });
  });

  it('accepts a 10 000-position circle within the budgets', () => {
    const n = MAX_POSITIONS - 1;
    const ring = Array.from({ length: n }, (_, i) => [
      Math.cos((2 * Math.PI * i) / n),
      Math.sin((2 * Math.PI * i) / n),
    ]);
    ring.push(ring[0]!);
    assert.ok(checkGeoJson(polygon(ring)).ok);
  });
});

describe('GeoJSON in a request payload', () => {
  const area = polygon(square(12.4, 41.8, 0.2), square(12.45, 41.85, 0.05));
  const routeLine = {
    type: 'LineString',
    coordinates: [
      [12.4, 41.8],
      [12.5, 41.9],
    ],
  };
  // A compute request (docs/protocol.md §2.1) whose steps carry GeoJSON in their context.
  const computeRequest = (stepArea: object, stepRoute: object) => ({
    requester_pk: 'ab'.repeat(32),
    h3_cell: '861e8050fffffff',
    steps: [
      { id: 'ndvi', type: 'image_process', operation: 'ndvi', context: { area: stepArea, date_from: '2026-01-01' } },
      { id: 'ask', type: 'inference', depends_on: 'ndvi', messages: [{ role: 'user', content: 'Parks?' }] },
      {
        id: 'map',
        type: 'tile_render',
        context: {
          overlays: {
            type: 'FeatureCollection',
            features: [{ type: 'Feature', geometry: { type: 'Point', coordinates: [12.5, 41.9] }, properties: {} }],
          },
          'route-line': stepRoute,
        },
      },
    ],
    signature: 'cd'.repeat(64),
  });
  const request = computeRequest(area, routeLine);

  it('finds nested GeoJSON in document order without descending into it', () => {
    const found = findGeoJson(request);
    assert.deepEqual(
      found.map((f) => f.path),
      ['$.steps[0].context.area', '$.steps[2].context.overlays', '$.steps[2].context["route-line"]'],
    );
    assert.equal(found[0]!.value, area);
  });

  it('finds a payload that is GeoJSON itself, and nothing in a payload without any', () => {
    assert.deepEqual(findGeoJson(area), [{ path: '$', value: area }]);
    assert.deepEqual(findGeoJson({ steps: [{ type: 'inference' }], n: 1, s: 'Point' }), []);
    assert.deepEqual(findGeoJson(null), []);
  });

  it('counts the GeoJSON objects it checked', () => {
    assert.deepEqual(checkPayloadGeometry(request), { ok: true, value: 3 });
    assert.deepEqual(checkPayloadGeometry({ steps: [] }), { ok: true, value: 0 });
  });

  it('names the JSON path of the first failure', () => {
    const openRing = polygon(square(12.4, 41.8, 0.2).slice(0, -1));
    const offThePlanet = {
      type: 'LineString',
      coordinates: [
        [12.4, 41.8],
        [12.5, 95],
      ],
    };
    const bad = computeRequest(openRing, offThePlanet);
    assert.deepEqual(checkPayloadGeometry(bad), {
      ok: false,
      error: 'invalid_geometry',
      detail: '$.steps[0].context.area.coordinates[0]: the ring is not closed (its first and last positions differ)',
    });
  });

  it('shares the position budget across the payload', () => {
    const half = Array.from({ length: MAX_POSITIONS / 2 + 1 }, () => [0, 0]);
    const payload = { a: { type: 'MultiPoint', coordinates: half }, b: { type: 'MultiPoint', coordinates: half } };
    const result = checkPayloadGeometry(payload);
    assert.ok(!result.ok && result.detail.startsWith('$.b.coordinates['), !result.ok ? result.detail : '');
  });

  it('refuses payloads nested deeper than it looks', () => {
    let payload: unknown = { type: 'Point', coordinates: [0, 500] };
    for (let i = 0; i < MAX_PAYLOAD_DEPTH + 1; i++) payload = { next: payload };
    const result = checkPayloadGeometry(payload);
    assert.equal(result.ok, false);
    assert.ok(!result.ok && result.error === 'invalid_request' && /nests deeper than 32/.test(result.detail));
  });
});
