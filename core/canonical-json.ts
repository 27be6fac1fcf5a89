/**
 * RFC 8785 JSON Canonicalization Scheme (JCS): object keys sorted by UTF-16 code units, recursively;
 * no whitespace; strings and numbers serialised exactly as ECMAScript's JSON.stringify does.
 * Signatures in Geofabric are always over the UTF-8 bytes of this string.
 */
export class CanonicalJsonError extends Error {
  override name = 'CanonicalJsonError';
}

export function canonicalJson(value: unknown): string {
  return serialize(value, '$');
}

function serialize(value: unknown, path: string): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'string':
      return JSON.stringify(value);
    case 'number':
      // I-JSON (RFC 7493) forbids NaN and the infinities; JCS inherits that.
      if (!Number.isFinite(value)) throw new CanonicalJsonError(`${path}: non-finite number`);
      return JSON.stringify(value); // ES Number::toString, as JCS section 3.2.2.3 requires; -0 becomes 0.
    case 'object': {
      if (Array.isArray(value)) {
        return `[${value.map((item, i) => (item === undefined ? 'null' : serialize(item, `${path}[${i}]`))).join(',')}]`;
      }
      if (typeof (value as { toJSON?: unknown }).toJSON === 'function') {
        return serialize((value as { toJSON: () => unknown }).toJSON(), path);
      }
      const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
      // Default sort compares UTF-16 code units, which is what JCS section 3.2.3 prescribes.
      entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${serialize(v, `${path}.${k}`)}`).join(',')}}`;
    }
    default:
      throw new CanonicalJsonError(`${path}: ${typeof value} is not representable in JSON`);
  }
}

/** UTF-8 bytes of the canonical form: the exact message that gets signed and hashed. */
export function canonicalBytes(value: unknown): Uint8Array {
  return new TextEncoder().encode(canonicalJson(value));
}
