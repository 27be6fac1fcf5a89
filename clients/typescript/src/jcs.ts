/**
 * RFC 8785 JSON Canonicalization Scheme: object keys sorted by UTF-16 code units at every level, no whitespace,
 * strings and numbers as ECMAScript's JSON.stringify writes them. Every Geofabric signature and hash is over the
 * UTF-8 of this text (docs/protocol.md §10.2).
 */
export class CanonicalJsonError extends Error {
  override name = 'CanonicalJsonError';
}

/** Nesting deeper than this is refused, as the server does. */
export const MAX_DEPTH = 1000;

export function canonicalize(value: unknown): string {
  return write(value, 0, '$');
}

function write(value: unknown, depth: number, path: string): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new CanonicalJsonError(`${path}: non-finite number`);
    return JSON.stringify(value); // -0 is written 0, 1e21 as 1e+21
  }
  if (typeof value !== 'object') throw new CanonicalJsonError(`${path}: ${typeof value} is not representable in JSON`);
  if (depth >= MAX_DEPTH) throw new CanonicalJsonError(`${path}: nesting deeper than ${MAX_DEPTH}`);
  if (Array.isArray(value)) {
    return `[${value.map((item, i) => (item === undefined ? 'null' : write(item, depth + 1, `${path}[${i}]`))).join(',')}]`;
  }
  const object = value as Record<string, unknown>;
  // Array.prototype.sort compares UTF-16 code units: exactly the RFC 8785 order.
  const keys = Object.keys(object)
    .filter((k) => object[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${write(object[k], depth + 1, `${path}.${k}`)}`).join(',')}}`;
}
