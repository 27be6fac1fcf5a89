import assert from 'node:assert/strict';
import { latLngToCell } from 'h3-js';
import { toolScopeRefusal, type ToolPolicy } from '../../core/gates/tool-policy.js';
import { resolveJurisdiction, touchedJurisdictions, type Jurisdiction } from '../../core/jurisdiction.js';
import { preflightTool } from '../../core/tool-preflight.js';
import type { DelegationCertificate } from '../../core/delegation-cert.js';

/** Resolution 2 over the Yalu: its centroid lies in North Korea, and it covers Dandong, China. */
const DANDONG_R2 = '82302ffffffffff';
const BEIJING = '8631aa42fffffff';

const codes = (places: readonly Jurisdiction[]) => places.map((p) => p.subdivision_code ?? p.country_code);

const chinaOnly: ToolPolicy = {
  version: 1,
  rules: [{ id: 'cn-no-web-search', tools: ['web-search', 'perception_classify'], jurisdictions: ['CN'] }],
};

describe('touched jurisdictions: a cell is judged by every place it touches, not its centroid', () => {
  it('finds China in the res-2 cell over the Yalu whose centroid is in North Korea', () => {
    assert.equal(resolveJurisdiction(DANDONG_R2).country_code, 'KP');
    const touched = touchedJurisdictions(DANDONG_R2);
    assert.equal(touched[0], resolveJurisdiction(DANDONG_R2), 'the centroid place first, the same object');
    assert.deepEqual(codes(touched), ['KP', 'CN']);
    assert.ok(touched.every((p) => p.h3_cell === DANDONG_R2 && Object.isFrozen(p)));
  });

  it('a China-only refusal now refuses that cell, at entry and in the MCP pre-flight alike', () => {
    const refusal = toolScopeRefusal(chinaOnly, ['web-search'], [DANDONG_R2], {});
    assert.equal(refusal?.rule, 'cn-no-web-search');
    assert.equal(refusal?.jurisdiction, 'CN');
    assert.match(refusal?.detail ?? '', /cell 82302ffffffffff \(CN, jurisdiction CN\)/);

    const now = Date.parse('2026-06-01T00:00:00Z');
    const certificate = {
      h3_cells: [DANDONG_R2],
      facets: ['*'],
      not_before: '2026-01-01T00:00:00Z',
      not_after: '2027-01-01T00:00:00Z',
    } as DelegationCertificate;
    const preflight = preflightTool({
      certificate,
      toolName: 'perception_classify',
      facet: 'perception',
      cell: DANDONG_R2,
      nowMs: now,
      opsInLastHour: 0,
      policy: { toolPolicy: chinaOnly, agentTier: 'sovereign' },
    });
    assert.equal(preflight.ok, false);
    assert.match(preflight.ok ? '' : preflight.detail, /\(CN, jurisdiction CN\) by tool policy rule cn-no-web-search/);
  });

  it('judges a cell wholly inside one place as before: exactly its centroid place', () => {
    const inside = [
      BEIJING,
      '861e8050fffffff', // Rome
      latLngToCell(39.7392, -104.9903, 6), // Denver, US-CO
      latLngToCell(22.3193, 114.1694, 8), // Hong Kong, CN-HK
      latLngToCell(-23.5505, -46.6333, 6), // São Paulo
      latLngToCell(-29.6, 28.2, 5), // inside Lesotho, a hole in South Africa's polygon
      latLngToCell(30, -40, 4), // mid-Atlantic: no country
    ];
    for (const cell of inside) assert.deepEqual(touchedJurisdictions(cell), [resolveJurisdiction(cell)], cell);
    assert.equal(toolScopeRefusal(chinaOnly, ['web-search'], ['861e8050fffffff'], {}), null);
    assert.equal(toolScopeRefusal(chinaOnly, ['web-search'], [BEIJING], {})?.rule, 'cn-no-web-search');
  });

  it('splits a US cell by the states it meets, and finds an enclave and its surroundings', () => {
    assert.deepEqual(codes(touchedJurisdictions('8526864bfffffff')), ['US-WY', 'US-CO', 'US-UT']);
    assert.deepEqual(codes(touchedJurisdictions(latLngToCell(-29.6, 28.2, 2))), ['LS', 'ZA']);
  });

  it('follows cells across the antimeridian and around the poles', () => {
    // Chukotka to Alaska, across 180°.
    assert.deepEqual(codes(touchedJurisdictions('810dbffffffffff')), ['RU', 'US-AK']);
    // Fiji on both sides of 180°, and Tonga further east.
    assert.deepEqual(codes(touchedJurisdictions('819b7ffffffffff')), ['FJ', 'TO']);
    // The res-0 cells around the poles.
    assert.deepEqual(codes(touchedJurisdictions(latLngToCell(-89.9, 0, 0))), ['AQ']);
    assert.deepEqual(codes(touchedJurisdictions(latLngToCell(89.9, 0, 0))), ['RU', 'NO-SJ', 'FI', 'NO', 'DK-GL']);
  });

  it('always starts with the centroid place and lists each place once, for cells anywhere', () => {
    for (let resolution = 1; resolution <= 5; resolution += 2) {
      for (let lat = -60; lat <= 70; lat += 26) {
        for (let lng = -170; lng < 180; lng += 37) {
          const cell = latLngToCell(lat, lng, resolution);
          const touched = touchedJurisdictions(cell);
          assert.equal(touched[0], resolveJurisdiction(cell), cell);
          const keys = touched.map((p) => `${p.country_code}|${p.country_name}|${p.subdivision_code}|${p.groups}`);
          assert.equal(new Set(keys).size, keys.length, cell);
        }
      }
    }
  });
});
