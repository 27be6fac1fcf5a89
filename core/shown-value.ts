/**
 * A short rendering of an untrusted value for an error detail. JSON.stringify of a request value is neither
 * bounded (a 1 MiB string comes back whole) nor safe (a 100,000-level array overflows the stack: a RangeError,
 * so a 500 instead of the 400 being built). This one reads at most a few levels and items, and cuts long text.
 * Small values render as JSON.stringify renders them.
 */
const MAX_DEPTH = 3;
const MAX_ITEMS = 10;

export function shownValue(value: unknown, maxChars = 120): string {
  const text = preview(value, 0, maxChars);
  return text.length > maxChars ? `${text.slice(0, maxChars)}…` : text;
}

function preview(value: unknown, depth: number, maxChars: number): string {
  if (typeof value === 'string') return JSON.stringify(value.length > maxChars ? value.slice(0, maxChars) : value);
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : 'null';
  if (value === null || typeof value === 'boolean') return String(value);
  if (typeof value !== 'object') return typeof value;
  const more = (count: number) => (count > MAX_ITEMS ? ',…' : '');
  if (Array.isArray(value)) {
    if (depth >= MAX_DEPTH) return '[…]';
    const items = value.slice(0, MAX_ITEMS).map((item: unknown) => preview(item, depth + 1, maxChars));
    return `[${items.join(',')}${more(value.length)}]`;
  }
  if (depth >= MAX_DEPTH) return '{…}';
  const keys = Object.keys(value);
  const entries = keys
    .slice(0, MAX_ITEMS)
    .map(
      (key) =>
        `${preview(key, MAX_DEPTH, maxChars)}:${preview((value as Record<string, unknown>)[key], depth + 1, maxChars)}`,
    );
  return `{${entries.join(',')}${more(keys.length)}}`;
}
