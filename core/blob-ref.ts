/**
 * A step output's field kept out of line (core/output-blobs.ts): what workflow inputs and results carry in
 * its place, so they stay far below Temporal's 2 MB payload limit whatever a step returns. Imported by workflow
 * code, so it imports nothing.
 */
export interface BlobRef {
  /** SHA-256 hex of the stored text: the field's canonical JSON (RFC 8785). */
  $blob: string;
  /** Length of that text in UTF-8 bytes. */
  bytes: number;
  /** A string field's first BLOB_HEAD_CHARS characters, for a dependent model's context. */
  head?: string;
}

export const isBlobRef = (value: unknown): value is BlobRef =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as BlobRef).$blob === 'string' &&
  /^[0-9a-f]{64}$/.test((value as BlobRef).$blob) &&
  typeof (value as BlobRef).bytes === 'number';

/** Whether any step output of `steps` holds a field kept out of line. */
export const hasBlobRefs = (steps: readonly { output: Record<string, unknown> }[]): boolean =>
  steps.some((step) => Object.values(step.output).some(isBlobRef));
