/**
 * An imagery step of a receipt recomputed (docs/protocol.md §15.6): every recorded byte range fetched and hashed as
 * the step hashed it, the step's own code run again on exactly those bytes, its output and cost compared with the
 * answered ones. Shared by the CLI's RECOMPUTERS (index.ts) and the TypeScript client's recomputeReceipt
 * (clients/typescript/src/recompute.ts), so both give the same verdict: it fetches only through `fetchRange`, and
 * imports nothing that does I/O or needs a native module (the client bundles it, clients/typescript/README.md).
 */
import type { ImageOperation } from '../../core/imagery-operations.js';
import { outputHash } from '../../core/job-hash.js';
import {
  assetBytesHash,
  jsonDifferences,
  recordedAssets,
  type RecomputeDifference,
  type StepRecomputation,
} from '../../core/receipt-recompute.js';
import { RECOMPUTED_OPERATIONS, type FetchedBytes } from '../imagery/recompute.js';

type Obj = Record<string, unknown>;

export type ImageStepOutcome = Omit<StepRecomputation, 'step_id' | 'what'>;

/** Bytes [offset, offset + length) of `href`; throws, saying which and why, when they cannot be had. */
export type FetchRange = (href: string, offset: number, length: number) => Promise<Uint8Array>;

/** What recomputing an imagery step starts from: its record's payload, its answer and the step as signed. */
export interface ImageStep {
  payload: Obj;
  output: Obj;
  cost: unknown;
  request: Obj;
}

/** Why an imagery operation that is not derived from pixels is not recomputed. */
const IMAGE_NOT_RECOMPUTABLE: Partial<Record<ImageOperation, string>> = {
  scene_search: 'a catalog search answers with what the catalog held then; it is not derived from pixels',
  atmospheric_correction: "the answer restates the catalog's L2A metadata; no pixel is read",
};

/** The outcome of one completed imagery step whose record is `imagery/<operation>`; a failed fetch throws. */
export async function recomputeImageStep(
  operation: ImageOperation,
  step: ImageStep,
  fetchRange: FetchRange,
): Promise<ImageStepOutcome> {
  const compute = RECOMPUTED_OPERATIONS[operation];
  if (!compute) {
    return {
      kind: 'not_recomputable',
      detail: IMAGE_NOT_RECOMPUTABLE[operation] ?? `the ${operation} operation has no recomputation yet`,
    };
  }
  const assets = recordedAssets(step.payload);
  if (typeof assets === 'string') return { kind: 'differs', detail: `the record's assets: ${assets}` };
  // Every range of every asset, fetched and hashed as the step hashed it, before any recomputation.
  const fetched = new Map<string, { offset: number; bytes: Uint8Array }[]>();
  const inputDiffs: RecomputeDifference[] = [];
  for (const asset of assets) {
    const pieces: { offset: number; bytes: Uint8Array }[] = [];
    for (const [offset, length] of asset.ranges)
      pieces.push({ offset, bytes: await fetchRange(asset.href, offset, length) });
    const hash = assetBytesHash(pieces.map((p) => p.bytes));
    if (hash !== asset.sha256)
      inputDiffs.push({ field: `assets.${asset.band}.sha256`, recorded: asset.sha256, recomputed: hash });
    fetched.set(asset.href, [...(fetched.get(asset.href) ?? []), ...pieces]);
  }
  const done = await compute(step.payload, step.output, step.request, fetched as FetchedBytes);
  if (done.kind === 'not_recomputable') return { kind: 'not_recomputable', detail: done.why };
  const bytesNote =
    inputDiffs.length > 0
      ? 'the recorded bytes are not served any more'
      : 'every recorded byte range matches its SHA-256';
  if (done.kind === 'failure') {
    return {
      kind: 'differs',
      detail: `the recomputation fails: ${done.failure}`,
      differences: [
        { field: 'output', recorded: 'the recorded answer', recomputed: `failure: ${done.failure}` },
        ...inputDiffs,
      ],
    };
  }
  // The step's cost is the result's (what the pixels read were charged), shown beside the output.
  const outputDiffs = [
    ...jsonDifferences(step.output, done.output),
    ...jsonDifferences(step.cost, (done.output.result as Obj | undefined)?.cost, 1, 'cost'),
  ];
  if (outputDiffs.length === 0 && inputDiffs.length === 0) {
    return { kind: 'recomputed', detail: `${bytesNote}; output_hash ${outputHash(done.output).slice(0, 12)}… equal` };
  }
  const fellBack = done.note === undefined ? '' : `; the recomputation could not read the pixels: ${done.note}`;
  return { kind: 'differs', detail: bytesNote + fellBack, differences: [...outputDiffs, ...inputDiffs] };
}
