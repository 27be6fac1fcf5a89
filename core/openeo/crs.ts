/**
 * Coordinate reference systems of openEO extents and cubes: WGS 84 (EPSG:4326), WGS 84 / UTM (326xx, 327xx, the
 * Sentinel-2 grids), ETRS89 / UTM (258xx, the process examples' cubes) and Web Mercator (3857), each written
 * out for proj4 so no global registry is involved.
 */
import proj4 from 'proj4';
import { OpenEoError } from './errors.js';

export function proj4Definition(epsg: number): string | null {
  if (epsg === 4326) return '+proj=longlat +datum=WGS84 +no_defs';
  if (epsg === 3857) {
    return '+proj=merc +a=6378137 +b=6378137 +lat_ts=0 +lon_0=0 +x_0=0 +y_0=0 +k=1 +units=m +nadgrids=@null +no_defs';
  }
  if (epsg >= 32601 && epsg <= 32660) return `+proj=utm +zone=${epsg - 32600} +datum=WGS84 +units=m +no_defs`;
  if (epsg >= 32701 && epsg <= 32760) return `+proj=utm +zone=${epsg - 32700} +south +datum=WGS84 +units=m +no_defs`;
  if (epsg >= 25828 && epsg <= 25838) {
    return `+proj=utm +zone=${epsg - 25800} +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs`;
  }
  return null;
}

/** An EPSG code from an openEO `crs` (a number, `"EPSG:n"`, or a numeric string); undefined when absent. */
export function epsgOf(crs: unknown, where: string): number {
  let code: number | undefined;
  if (typeof crs === 'number' && Number.isInteger(crs)) code = crs;
  else if (typeof crs === 'string') {
    const match = /^(?:EPSG:)?(\d{4,5})$/i.exec(crs.trim());
    if (match) code = Number(match[1]);
  }
  if (code === undefined || proj4Definition(code) === null) {
    throw new OpenEoError(
      'ProcessParameterInvalid',
      `${where}: the CRS ${JSON.stringify(crs)} is not supported (EPSG:4326, 3857, 326xx, 327xx or 258xx)`,
    );
  }
  return code;
}

export type Transform = (point: [number, number]) => [number, number];

/** A point transform between two supported EPSG codes (identity when equal). */
export function transformer(from: number, to: number): Transform {
  if (from === to) return (p) => p;
  const converter = proj4(proj4Definition(from)!, proj4Definition(to)!);
  return (p) => converter.forward(p) as [number, number];
}

/**
 * The bounding box in `to` of a box given in `from`: its edges sampled (a box's edges curve under projection),
 * [minX, minY, maxX, maxY].
 */
export function transformBox(box: [number, number, number, number], from: number, to: number): number[] {
  const forward = transformer(from, to);
  const [w, s, e, n] = box;
  const xs: number[] = [];
  const ys: number[] = [];
  const steps = from === to ? 1 : 16;
  for (let i = 0; i <= steps; i++) {
    const fx = w + ((e - w) * i) / steps;
    const fy = s + ((n - s) * i) / steps;
    for (const p of [forward([fx, s]), forward([fx, n]), forward([w, fy]), forward([e, fy])]) {
      xs.push(p[0]);
      ys.push(p[1]);
    }
  }
  return [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
}

/** The UTM zone's WGS 84 EPSG code at a longitude and latitude (the Sentinel-2 tiling's). */
export function utmEpsgAt(lng: number, lat: number): number {
  const zone = Math.min(60, Math.max(1, Math.floor((lng + 180) / 6) + 1));
  return (lat >= 0 ? 32600 : 32700) + zone;
}
