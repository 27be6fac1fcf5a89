/**
 * `If-None-Match` evaluation (RFC 9110 §13.1.2): the condition is false (answer 304) when the field is
 * `*` or lists an entity tag that matches ours by weak comparison (`W/"a"` matches `"a"`). A field that
 * does not parse is ignored, as the RFC asks, so a malformed header costs a full response, never a
 * wrong 304.
 */

// entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE; etagc = %x21 / %x23-7E / obs-text. Commas may sit inside the quotes.
const ENTITY_TAG = /^\s*(?:W\/)?("[\x21\x23-\x7e\x80-\xff]*")\s*(?:,|$)/;

/** Opaque tags of a list field, or null when the field is malformed. `*` is returned as itself. */
export function parseEntityTags(field: string): string[] | null {
  if (field.trim() === '*') return ['*'];
  const tags: string[] = [];
  let rest = field;
  while (rest.trim() !== '') {
    // Empty list elements (", ,") are allowed by the list syntax (RFC 9110 §5.6.1).
    const empty = /^\s*,/.exec(rest);
    if (empty) {
      rest = rest.slice(empty[0].length);
      continue;
    }
    const match = ENTITY_TAG.exec(rest);
    if (!match) return null;
    tags.push(match[1]!);
    rest = rest.slice(match[0].length);
  }
  return tags;
}

/** True when a 304 is the answer: `ifNoneMatch` (the header, or undefined) matches our strong `etag`. */
export function noneMatchFails(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined || ifNoneMatch === '') return false;
  const tags = parseEntityTags(ifNoneMatch);
  if (tags === null) return false;
  const opaque = etag.startsWith('W/') ? etag.slice(2) : etag;
  return tags.some((tag) => tag === '*' || tag === opaque);
}
