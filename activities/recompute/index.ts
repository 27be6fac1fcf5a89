/**
 * Recomputing a verified receipt's steps from the public inputs their records name (docs/protocol.md §15.6):
 * `geofabric receipt verify --recompute` runs it after the offline checks passed. One entry of RECOMPUTERS per
 * step type of the registry (core/step-types/), by the payload type of the record the step writes ('none' for a
 * type that writes none): adding a recomputable type is one entry there.
 *
 * What is fetched: only the asset URLs an imagery record lists, only the byte ranges it lists (HTTP Range), and,
 * for a tile step, the tile the caller's own URL template names. The fetching itself (schemes, addresses, bounds)
 * is the caller's `io` (bin/receipt-recompute.ts for the CLI).
 */
import { canonicalJson } from '../../core/canonical-json.js';
import { IMAGE_OPERATIONS, type ImageOperation } from '../../core/imagery-operations.js';
import type { PayloadType } from '../../core/proof-types.js';
import {
  inferenceBound,
  receiptSteps,
  type ReceiptStep,
  type StepRecomputation,
} from '../../core/receipt-recompute.js';
import type { JobReceipt } from '../../core/receipt.js';
import { sha256Hex } from '../../core/hash.js';
import type { StepType } from '../../core/step-types/index.js';
import { drawAnnotations, imageSize } from '../tiles/tile-annotate.js';
import { tileUrl } from '../tiles/tile-upstream.js';
import { recomputeImageStep } from './imagery.js';
import type { TileFormat } from '../../core/tile-request.js';

/** An input could not be fetched; `message` says which and why (it goes in the public line). */
export class InputUnavailable extends Error {
  override name = 'InputUnavailable';
}

export interface RecomputeIo {
  /** Bytes [offset, offset + length) of `href`; throws InputUnavailable when they cannot be had. */
  fetchRange(href: string, offset: number, length: number): Promise<Uint8Array>;
  /** The whole resource at `url` (a map tile); throws InputUnavailable likewise. */
  fetchBytes(url: string): Promise<Uint8Array>;
  /** `{z}/{x}/{y}` URL templates of tile upstreams by style, or one for every style (`*`). */
  tileTemplates?: Readonly<Record<string, string>>;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
type Outcome = Omit<StepRecomputation, 'step_id' | 'what'>;
type Recomputer = (step: ReceiptStep, io: RecomputeIo, receipt: JobReceipt) => Promise<Outcome>;

/** An imagery step: recomputeImageStep (imagery.ts), which the TypeScript client runs too. */
const imageRecomputer =
  (operation: ImageOperation): Recomputer =>
  (step, io) =>
    recomputeImageStep(
      operation,
      {
        payload: (step.record?.payload ?? {}) as Obj,
        output: step.answer.output,
        cost: step.answer.cost,
        request: step.request,
      },
      (href, offset, length) => io.fetchRange(href, offset, length),
    );

/** Per step type, per payload type of its record ('none': the type writes no record). */
export const RECOMPUTERS: { [K in StepType]: Partial<Record<PayloadType | 'none', Recomputer>> } = {
  image_process: {
    ...Object.fromEntries(
      IMAGE_OPERATIONS.map((operation) => [`imagery/${operation}`, imageRecomputer(operation)] as const),
    ),
  },
  tile_render: { 'tile/raster': recomputeTile },
  inference: {
    'hive/inference': async (step) => ({
      kind: 'not_recomputable',
      detail: "a model's answer is not a function of public inputs",
      bound: inferenceBound(step.record?.payload),
    }),
  },
  sensor_fusion: {
    // verifyReceipt's fusion_inputs check recomputed it from its signed inputs before anything is fetched, unless
    // some were pending (a receipt verified with --allow-pending).
    none: async (step, _io, receipt) => {
      const ids = Array.isArray(step.answer.output.record_ids) ? step.answer.output.record_ids : [];
      const held = receipt.records.filter((r) => r.role === 'input' && r.step_id === step.answer.id && r.record);
      return held.length === ids.length
        ? { kind: 'recomputed', detail: `from its ${ids.length} signed readings by the fusion_inputs check` }
        : { kind: 'inputs_unavailable', detail: `${ids.length - held.length} of its signed readings are pending` };
    },
  },
};

/** Each answered step's outcome, in request order. The receipt must have passed verifyReceipt first. */
export async function recomputeReceipt(receipt: JobReceipt, io: RecomputeIo): Promise<StepRecomputation[]> {
  const out: StepRecomputation[] = [];
  for (const step of receiptSteps(receipt)) {
    const payloadType = step.record?.payload_type;
    const operation = isObj(step.record?.payload) ? step.record.payload.operation : undefined;
    const what =
      step.answer.type === 'image_process' && typeof operation === 'string'
        ? `image_process ${operation}`
        : step.answer.type;
    let outcome: Outcome;
    if (step.answer.status === 'complete' && step.answer.record_id !== null && step.record === null) {
      // A pending receipt (--allow-pending): nothing to recompute from until the record is synced.
      outcome = { kind: 'inputs_unavailable', detail: `its record ${step.answer.record_id} is not in the receipt yet` };
    } else if (step.answer.status !== 'complete') {
      outcome = {
        kind: 'not_recomputable',
        detail: `the step did not complete (${step.answer.error?.code ?? step.answer.status})`,
      };
    } else {
      const table = RECOMPUTERS[step.answer.type] as Partial<Record<string, Recomputer>> | undefined;
      const recompute = table?.[payloadType ?? 'none'];
      outcome = recompute
        ? await recompute(step, io, receipt).catch((error: unknown): Outcome => ({
            kind: 'inputs_unavailable',
            // A fetch that failed says which and why; anything else (a tile that does not decode …) concludes nothing.
            detail:
              error instanceof InputUnavailable
                ? error.message
                : `the recomputation could not run: ${(error as Error).message}`,
          }))
        : { kind: 'not_recomputable', detail: `no recomputation is defined for ${payloadType ?? step.answer.type}` };
    }
    out.push({ step_id: step.answer.id, what, ...outcome });
  }
  return out;
}

/**
 * A tile step: the plain tile fetched again from the caller's template must hash to the record's `tile_sha256`
 * (else the upstream changed it since: map tiles are live, so that is no forgery), and the annotations the record
 * lists, drawn on it with the step's own code, must give the image's `sha256`.
 */
async function recomputeTile(step: ReceiptStep, io: RecomputeIo): Promise<Outcome> {
  const p = (step.record?.payload ?? {}) as Obj;
  if (p.kind !== 'render') return { kind: 'not_recomputable', detail: 'not a tile_render record' };
  const style = String(p.style);
  const template = io.tileTemplates?.[style] ?? io.tileTemplates?.['*'];
  if (template === undefined) {
    return {
      kind: 'inputs_unavailable',
      detail: `the record names the tile upstream by host only (${String(p.upstream_host)}); give its URL template with --tile-url`,
    };
  }
  const url = tileUrl(template, Number(p.zoom), Number(p.x), Number(p.y));
  const host = new URL(url).host;
  if (host !== p.upstream_host) {
    return {
      kind: 'inputs_unavailable',
      detail: `--tile-url names ${host}, the record's upstream is ${String(p.upstream_host)}`,
    };
  }
  const tile = await io.fetchBytes(url);
  const tileHash = sha256Hex(tile);
  if (tileHash !== p.tile_sha256) {
    return {
      kind: 'upstream_changed',
      detail: `tile_sha256: recorded ${String(p.tile_sha256).slice(0, 12)}…, ${host} now serves ${tileHash.slice(0, 12)}…`,
    };
  }
  let image: Uint8Array = tile;
  const annotations = Array.isArray(p.annotations) ? (p.annotations as Obj[]) : [];
  if (annotations.some((a) => a.pixel !== null)) {
    image = await drawAnnotations(
      tile,
      p.format as TileFormat,
      annotations.map((a) => ({
        name: String(a.name),
        address: '',
        cell: (a.cell as string | null) ?? null,
        pixel: (a.pixel as { x: number; y: number } | null) ?? null,
        placed: a.pixel !== null,
      })),
      await imageSize(tile),
    );
  }
  const imageHash = sha256Hex(image);
  if (imageHash !== p.sha256) {
    return {
      kind: 'differs',
      detail: 'the annotated image',
      differences: [{ field: 'sha256', recorded: p.sha256, recomputed: imageHash }],
    };
  }
  if (canonicalJson(step.answer.output.sha256) !== canonicalJson(p.sha256)) {
    return {
      kind: 'differs',
      detail: 'the output',
      differences: [{ field: 'output.sha256', recorded: step.answer.output.sha256, recomputed: imageHash }],
    };
  }
  return {
    kind: 'recomputed',
    detail: `the upstream tile matches tile_sha256${image === tile ? '' : ', the annotations redrawn give sha256'}`,
  };
}
