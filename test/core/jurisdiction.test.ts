import assert from 'node:assert/strict';
import { latLngToCell } from 'h3-js';
import { isInJurisdiction, isKnownJurisdictionCode, resolveJurisdiction } from '../../core/jurisdiction.js';
import { DEFAULT_MAX_AUTONOMY_TIER } from '../../core/regulatory-frameworks.js';

const PLACES = {
  rome: [41.9028, 12.4964],
  palermo: [38.1157, 13.3615],
  nice: [43.7102, 7.262],
  brussels: [50.8503, 4.3517],
  zurich: [47.3769, 8.5417],
  berlin: [52.52, 13.405],
  sanFrancisco: [37.7749, -122.4194],
  newYork: [40.7128, -74.006],
  saoPaulo: [-23.5505, -46.6333],
  singapore: [1.3521, 103.8198],
  midAtlantic: [30, -40],
  sanJuan: [18.4655, -66.1057],
  hongKong: [22.3193, 114.1694],
  honolulu: [21.3069, -157.8583],
  edinburgh: [55.9533, -3.1883],
  oslo: [59.9139, 10.7522],
  nuuk: [64.1814, -51.6941],
  denver: [39.7392, -104.9903],
  // US territorial waters off Cape Cod, outside every state polygon.
  offCapeCod: [41.9, -69.7],
} as const satisfies Record<string, readonly [number, number]>;

type Place = keyof typeof PLACES;

const cellAt = (place: Place, resolution: number): string => {
  const [lat, lng] = PLACES[place];
  return latLngToCell(lat, lng, resolution);
};
const at = (place: Place, resolution = 6) => resolveJurisdiction(cellAt(place, resolution));
const frameworkIds = (place: Place) => at(place).frameworks.map((f) => f.id);

describe('jurisdiction resolution', () => {
  const countries: Array<[Place, string, string]> = [
    ['rome', 'IT', 'Italy'],
    ['palermo', 'IT', 'Italy'],
    ['nice', 'FR', 'France'], // a bounding box for Italy used to claim Nice
    ['brussels', 'BE', 'Belgium'], // … and one for the Netherlands, Brussels
    ['zurich', 'CH', 'Switzerland'],
    ['berlin', 'DE', 'Germany'],
    ['sanFrancisco', 'US', 'United States of America'],
    ['newYork', 'US', 'United States of America'],
    ['saoPaulo', 'BR', 'Brazil'],
    ['singapore', 'SG', 'Singapore'],
  ];
  for (const [place, code, name] of countries) {
    for (const resolution of [6, 9]) {
      it(`resolves ${place} at resolution ${resolution} to ${code}`, () => {
        const cell = cellAt(place, resolution);
        const j = resolveJurisdiction(cell);
        assert.equal(j.h3_cell, cell);
        assert.equal(j.country_code, code);
        assert.equal(j.country_name, name);
      });
    }
  }

  it('resolves the open sea to no country, no frameworks and the default cap', () => {
    const j = at('midAtlantic');
    assert.equal(j.country_code, null);
    assert.equal(j.country_name, null);
    assert.equal(j.subdivision_code, null);
    assert.deepEqual(j.groups, []);
    assert.deepEqual(j.frameworks, []);
    assert.equal(j.max_autonomy_tier, DEFAULT_MAX_AUTONOMY_TIER);
  });

  it('gives EU members the EU frameworks plus their national ones', () => {
    assert.deepEqual(at('rome').groups, ['EU', 'EEA']);
    assert.deepEqual(frameworkIds('rome'), ['GDPR', 'EU_AI_ACT', 'EIDAS2', 'IT_AI_LAW', 'IT_PRIVACY_CODE']);
    assert.deepEqual(frameworkIds('berlin'), ['GDPR', 'EU_AI_ACT', 'EIDAS2', 'DE_BDSG']);
    assert.deepEqual(frameworkIds('nice'), ['GDPR', 'EU_AI_ACT', 'EIDAS2', 'FR_LIL']);
    assert.deepEqual(frameworkIds('brussels'), ['GDPR', 'EU_AI_ACT', 'EIDAS2']);
    // The AI Act's human-oversight rule is the strictest cap.
    assert.equal(at('rome').max_autonomy_tier, 'trusted');
  });

  it('gives non-EU countries their own frameworks only', () => {
    assert.deepEqual(at('zurich').groups, []);
    assert.deepEqual(frameworkIds('zurich'), ['CH_NFADP']);
    assert.equal(at('zurich').max_autonomy_tier, 'certified');
    assert.deepEqual(frameworkIds('saoPaulo'), ['BR_LGPD']);
    assert.deepEqual(frameworkIds('singapore'), ['SG_PDPA']);
    assert.deepEqual(frameworkIds('edinburgh'), ['UK_GDPR']);
  });

  it('gives EEA members outside the EU the GDPR but not the AI Act', () => {
    assert.deepEqual(at('oslo').groups, ['EEA']);
    assert.deepEqual(frameworkIds('oslo'), ['GDPR']);
  });

  it('resolves US states from state borders and adds state law where it differs', () => {
    const sf = at('sanFrancisco');
    assert.equal(sf.subdivision_code, 'US-CA');
    assert.deepEqual(frameworkIds('sanFrancisco'), ['US_FTC_ACT', 'US_CA_CCPA']);
    assert.equal(at('newYork').subdivision_code, 'US-NY');
    assert.equal(at('denver').subdivision_code, 'US-CO');
    assert.ok(frameworkIds('denver').includes('US_CO_AI_ACT'));
    assert.equal(at('denver').max_autonomy_tier, 'trusted'); // Colorado's AI Act
    assert.equal(sf.max_autonomy_tier, 'certified');
  });

  it('caps US cells outside every state at the strictest state law, since the state is unknown', () => {
    const offshore = at('offCapeCod');
    assert.equal(offshore.country_code, 'US');
    assert.equal(offshore.subdivision_code, null);
    assert.equal(offshore.max_autonomy_tier, 'trusted');
  });

  it('resolves subdivisions the borders data knows', () => {
    assert.equal(at('sanJuan').subdivision_code, 'US-PR');
    assert.equal(at('sanJuan').country_code, 'US');
    assert.equal(at('honolulu').subdivision_code, 'US-HI');
    assert.equal(at('edinburgh').subdivision_code, 'GB-SCT');
    assert.equal(at('nuuk').subdivision_code, 'DK-GL');
  });

  it('lets a subdivision replace national law (Hong Kong)', () => {
    const hk = at('hongKong');
    assert.equal(hk.country_code, 'CN');
    assert.equal(hk.subdivision_code, 'CN-HK');
    assert.deepEqual(frameworkIds('hongKong'), ['HK_PDPO']);
  });

  it('places Greenland outside the EU although Denmark is a member', () => {
    assert.equal(at('nuuk').country_code, 'DK');
    assert.deepEqual(at('nuuk').groups, []);
    assert.ok(!frameworkIds('nuuk').includes('GDPR'));
  });

  it('memoizes and freezes the result', () => {
    const cell = cellAt('rome', 7);
    const first = resolveJurisdiction(cell);
    assert.equal(resolveJurisdiction(cell), first);
    assert.ok(Object.isFrozen(first) && Object.isFrozen(first.frameworks) && Object.isFrozen(first.groups));
  });
});

describe('jurisdiction codes', () => {
  it('knows groups, ISO 3166-1 alpha-2 codes and subdivision codes, case-insensitively', () => {
    for (const code of ['EU', 'eea', 'IT', 'us', 'FR', 'CH', 'HK', 'US-CA', 'us-ny', 'US-PR', 'GB-SCT', 'CN-HK']) {
      assert.ok(isKnownJurisdictionCode(code), code);
    }
  });

  it('rejects unknown codes and aliases', () => {
    for (const code of ['XX', '', 'UK', 'EUR', 'US-XX', 'CA-ON', 'Q21', 'italy', '380']) {
      assert.ok(!isKnownJurisdictionCode(code), code);
    }
  });

  it('matches a group against its members only', () => {
    assert.ok(isInJurisdiction(at('rome'), 'EU'));
    assert.ok(isInJurisdiction(at('nice'), 'eu'));
    assert.ok(!isInJurisdiction(at('zurich'), 'EU'));
    assert.ok(isInJurisdiction(at('oslo'), 'EEA'));
    assert.ok(!isInJurisdiction(at('oslo'), 'EU'));
  });

  it('matches countries and subdivisions', () => {
    assert.ok(isInJurisdiction(at('rome'), 'IT'));
    assert.ok(!isInJurisdiction(at('nice'), 'IT'));
    assert.ok(isInJurisdiction(at('sanFrancisco'), 'US'));
    assert.ok(isInJurisdiction(at('sanJuan'), 'US'));
    assert.ok(isInJurisdiction(at('sanJuan'), 'US-PR'));
    assert.ok(isInJurisdiction(at('sanJuan'), 'PR')); // a territory's own alpha-2
    assert.ok(isInJurisdiction(at('hongKong'), 'HK'));
    assert.ok(isInJurisdiction(at('edinburgh'), 'GB-SCT'));
    assert.ok(!isInJurisdiction(at('honolulu'), 'US-CA'));
  });

  it('does not confuse a country with a state of the same letters', () => {
    // 'CA' is Canada; it must not match a cell resolved to US-CA (or anything in the US).
    assert.ok(!isInJurisdiction(at('sanFrancisco'), 'CA'));
    const california = at('sanFrancisco');
    assert.ok(isInJurisdiction(california, 'US-CA'));
    assert.ok(isInJurisdiction(california, 'US'));
    assert.ok(!isInJurisdiction(california, 'CA'));
  });

  it('matches nothing for unknown codes', () => {
    assert.ok(!isInJurisdiction(at('rome'), 'XX'));
    assert.ok(!isInJurisdiction(at('midAtlantic'), 'XX'));
    assert.ok(!isInJurisdiction(at('midAtlantic'), 'EU'));
  });
});
