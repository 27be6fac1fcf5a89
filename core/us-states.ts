import { geoContains } from 'd3-geo';
import type { Feature, Geometry } from 'geojson';
import { feature } from 'topojson-client';
import type { GeometryCollection, Topology } from 'topojson-specification';
import statesTopology from 'us-atlas/states-10m.json' with { type: 'json' };
import { bboxOf, footprintMeets, type Bbox, type Footprint, type PolygonRings } from './cell-footprint.js';

/**
 * US state borders (us-atlas: Census Bureau cartographic boundaries, 1:10m), because state law
 * differs (CCPA in California, the AI Act in Colorado …) and country-coder draws no contiguous-US
 * states. Keyed by FIPS code, which us-atlas uses as the feature id.
 */
const FIPS_TO_POSTAL: Readonly<Record<string, string>> = {
  '01': 'AL', '02': 'AK', '04': 'AZ', '05': 'AR', '06': 'CA', '08': 'CO', '09': 'CT', '10': 'DE', '11': 'DC',
  '12': 'FL', '13': 'GA', '15': 'HI', '16': 'ID', '17': 'IL', '18': 'IN', '19': 'IA', '20': 'KS', '21': 'KY',
  '22': 'LA', '23': 'ME', '24': 'MD', '25': 'MA', '26': 'MI', '27': 'MN', '28': 'MS', '29': 'MO', '30': 'MT',
  '31': 'NE', '32': 'NV', '33': 'NH', '34': 'NJ', '35': 'NM', '36': 'NY', '37': 'NC', '38': 'ND', '39': 'OH',
  '40': 'OK', '41': 'OR', '42': 'PA', '44': 'RI', '45': 'SC', '46': 'SD', '47': 'TN', '48': 'TX', '49': 'UT',
  '50': 'VT', '51': 'VA', '53': 'WA', '54': 'WV', '55': 'WI', '56': 'WY', '60': 'AS', '66': 'GU', '69': 'MP',
  '72': 'PR', '78': 'VI',
}; // prettier-ignore

interface State {
  code: string;
  shape: Feature<Geometry>;
  /** The shape's polygons as planar [lng, lat] rings, for `usStatesMeeting`. */
  polygons: { rings: PolygonRings; bbox: Bbox }[];
}

let states: State[] | undefined;

/** Decoded on first use: most deployments never resolve a US cell. */
function loadStates(): State[] {
  const topology = statesTopology as unknown as Topology<{ states: GeometryCollection }>;
  const collection = feature(topology, topology.objects.states);
  return collection.features.flatMap((shape) => {
    const postal = FIPS_TO_POSTAL[String(shape.id)];
    return postal ? [{ code: `US-${postal}`, shape, polygons: polygonsOf(shape.geometry) }] : [];
  });
}

/** ISO 3166-2 code of the US state (or DC, or territory) containing the point, or null (e.g. offshore). */
export function usStateAt(lng: number, lat: number): string | null {
  states ??= loadStates();
  return states.find((state) => geoContains(state.shape, [lng, lat]))?.code ?? null;
}

function polygonsOf(geometry: Geometry): State['polygons'] {
  const polygons =
    geometry.type === 'Polygon' ? [geometry.coordinates] : geometry.type === 'MultiPolygon' ? geometry.coordinates : [];
  return polygons.map((rings) => {
    const planar = rings as unknown as PolygonRings;
    return { rings: planar, bbox: bboxOf(planar) };
  });
}

/**
 * ISO 3166-2 codes of the US states (and DC, territories) a cell's outline meets (core/cell-footprint.ts), in
 * us-atlas order: how a cell over a state line is judged in both states.
 */
export function usStatesMeeting(footprint: Footprint): string[] {
  states ??= loadStates();
  return states
    .filter((state) => state.polygons.some(({ rings, bbox }) => footprintMeets(footprint, rings, bbox)))
    .map((state) => state.code);
}
