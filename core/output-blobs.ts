/**
 * Payload discipline (docs/architecture.md, Temporal): a step output's top-level field whose canonical JSON
 * is larger than INLINE_FIELD_BYTES is stored content-addressed (its SHA-256) in the job store's blobs and
 * replaced by a BlobRef (core/blob-ref.ts). A step output then carries at most its small fields plus one small
 * reference per large one, so the workflow's inputs, activity results and its result stay far below
 * Temporal's 2 MB payload limit. The job hash, the proof record and the stored job are computed over the
 * resolved output: where a field was kept changes nothing a requester sees.
 */
import { canonicalJson } from './canonical-json.js';
import { isBlobRef, type BlobRef } from './blob-ref.js';
import { sha256Hex } from './hash.js';

/** Largest field kept inline, in UTF-8 bytes of its canonical JSON. */
export const INLINE_FIELD_BYTES = 16 * 1024;
/** Characters of a large string field kept in its reference (a dependent model sees them). */
export const BLOB_HEAD_CHARS = 1000;

export interface SplitOutput {
  output: Record<string, unknown>;
  /** SHA-256 hex → the canonical JSON text stored under it. */
  blobs: Map<string, string>;
}

/** `output` with each field larger than INLINE_FIELD_BYTES replaced by its reference; unchanged when none is. */
export function splitOutput(output: Record<string, unknown>): SplitOutput {
  const blobs = new Map<string, string>();
  let inline: Record<string, unknown> | null = null;
  for (const [key, value] of Object.entries(output)) {
    if (isBlobRef(value) || value === undefined) continue;
    // A scalar or a short string (JSON escapes at most 6 bytes per character) fits: skip its canonical JSON.
    const small =
      value === null ||
      typeof value === 'number' ||
      typeof value === 'boolean' ||
      (typeof value === 'string' && value.length * 6 <= INLINE_FIELD_BYTES);
    if (small) continue;
    const text = canonicalJson(value);
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes <= INLINE_FIELD_BYTES) continue;
    const ref: BlobRef = { $blob: sha256Hex(text), bytes };
    if (typeof value === 'string') ref.head = value.slice(0, BLOB_HEAD_CHARS);
    blobs.set(ref.$blob, text);
    (inline ??= { ...output })[key] = ref;
  }
  return { output: inline ?? output, blobs };
}

/** The hashes `output` refers to. */
export const blobIdsOf = (output: Record<string, unknown>): string[] =>
  Object.values(output).flatMap((value) => (isBlobRef(value) ? [value.$blob] : []));

/**
 * `output` with every reference replaced by its stored value. A missing or altered blob is a store fault,
 * never guessed around: RangeError.
 */
export function resolveOutput(
  output: Record<string, unknown>,
  blobs: ReadonlyMap<string, string>,
): Record<string, unknown> {
  if (!Object.values(output).some(isBlobRef)) return output;
  const resolved: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(output)) {
    if (!isBlobRef(value)) {
      resolved[key] = value;
      continue;
    }
    const text = blobs.get(value.$blob);
    if (text === undefined || sha256Hex(text) !== value.$blob) {
      throw new RangeError(`step output field "${key}": blob ${value.$blob} is missing or altered`);
    }
    resolved[key] = JSON.parse(text);
  }
  return resolved;
}
