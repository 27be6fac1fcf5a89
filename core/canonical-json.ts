/**
 * RFC 8785 JSON Canonicalization Scheme (JCS): object keys sorted by UTF-16 code units, recursively;
 * no whitespace; strings and numbers serialised exactly as ECMAScript's JSON.stringify does.
 * Signatures in Geofabric are always over the UTF-8 bytes of this string.
 */
export class CanonicalJsonError extends Error {
  override name = 'CanonicalJsonError';
}

/**
 * Deepest nesting of arrays and objects serialised. Serialisation recurses, so without a bound a hostile
 * body (a 1 MiB request holds 500,000 levels) overflows the stack: a RangeError, not a clean refusal.
 */
export const MAX_CANONICAL_DEPTH = 1000;

export function canonicalJson(value: unknown): string {
  try {
    return serialize(value);
  } catch (error) {
    if (!(error instanceof CanonicalJsonError)) throw error;
    // The fast path keeps no paths; find the offending value's path only now.
    throw new CanonicalJsonError(`${pathOfFirstBad(value, '$') ?? '$'}: ${error.message}`);
  }
}

function unrepresentable(value: unknown): string | null {
  if (typeof value === 'number') return Number.isFinite(value) ? null : 'non-finite number';
  if (['bigint', 'symbol', 'function'].includes(typeof value)) return `${typeof value} is not representable in JSON`;
  return null;
}

function serialize(value: unknown, depth = 0): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'string':
      return JSON.stringify(value);
    case 'number':
      // I-JSON (RFC 7493) forbids NaN and the infinities; JCS inherits that.
      if (!Number.isFinite(value)) throw new CanonicalJsonError('non-finite number');
      return JSON.stringify(value); // ES Number::toString, as JCS section 3.2.2.3 requires; -0 becomes 0.
    case 'object': {
      if (depth >= MAX_CANONICAL_DEPTH) throw new CanonicalJsonError(tooDeep);
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++) {
          const item: unknown = value[i];
          out += (i > 0 ? ',' : '') + (item === undefined ? 'null' : serialize(item, depth + 1));
        }
        return out + ']';
      }
      if (typeof (value as { toJSON?: unknown }).toJSON === 'function') {
        return serialize((value as { toJSON: () => unknown }).toJSON(), depth);
      }
      // Default sort compares UTF-16 code units, which is what JCS section 3.2.3 prescribes.
      const keys = Object.keys(value).sort();
      let out = '{';
      for (const key of keys) {
        const v = (value as Record<string, unknown>)[key];
        if (v === undefined) continue;
        out += `${out.length > 1 ? ',' : ''}${JSON.stringify(key)}:${serialize(v, depth + 1)}`;
      }
      return out + '}';
    }
    default:
      throw new CanonicalJsonError(`${typeof value} is not representable in JSON`);
  }
}

const tooDeep = `nests deeper than ${MAX_CANONICAL_DEPTH} levels`;

function pathOfFirstBad(value: unknown, path: string, depth = 0): string | null {
  if (unrepresentable(value) !== null) return path;
  if (typeof value !== 'object' || value === null) return null;
  // Only the start of the path: the full one of a 500,000-level value would be megabytes.
  if (depth >= MAX_CANONICAL_DEPTH) return path.length > 200 ? `${path.slice(0, 200)}…` : path;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = pathOfFirstBad(value[i], `${path}[${i}]`, depth + 1);
      if (found !== null) return found;
    }
    return null;
  }
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    return pathOfFirstBad((value as { toJSON: () => unknown }).toJSON(), path, depth);
  }
  for (const key of Object.keys(value).sort()) {
    const found = pathOfFirstBad((value as Record<string, unknown>)[key], `${path}.${key}`, depth + 1);
    if (found !== null) return found;
  }
  return null;
}

/** UTF-8 bytes of the canonical form: the exact message that gets signed and hashed. */
export function canonicalBytes(value: unknown): Uint8Array {
  return new TextEncoder().encode(canonicalJson(value));
}
