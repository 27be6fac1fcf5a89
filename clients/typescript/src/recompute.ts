/**
 * Recomputing a verified receipt's steps from the public inputs their records name (docs/protocol.md §15.6), through
 * a fetch the caller supplies. The offline verification is this client's own, written from the protocol alone; the
 * imagery recomputation is the server's (activities/recompute/imagery.ts, bundled into the package's build, see
 * README.md), so the client and `geofabric receipt verify --recompute` give the same verdict.
 *
 * What this client does per step type:
 * - `image_process` (`ndvi`, `flood_classify`, `cloud_mask`, `band_math` from pixels): re-fetches every recorded
 *   byte range of every asset (HTTP Range, only the URLs the record lists), checks each asset's SHA-256, decodes
 *   the GeoTIFF bytes and runs the step's own computation on exactly them; the output (as canonical JSON) and the
 *   cost must be the recorded ones: `recomputed`, else `differs`, naming the fields and assets.
 * - `tile_render`: fetches the tile from the caller's URL template (the record names the upstream by host only)
 *   and compares it with `tile_sha256`: equal and unannotated is `recomputed`; another tile is `upstream_changed`.
 * - `inference`: `not_recomputable`, with what the record binds (model, provider, prompt and answer hashes).
 * - `sensor_fusion`: `recomputed` by verifyReceipt's `fusion_inputs` check.
 *
 * The caller's fetch decides which addresses may be reached (a browser cannot tell a private one); this module
 * refuses any URL but https (and http with `allowHttp`), follows no redirect, bounds every answer and the total.
 */
import { IMAGE_OPERATIONS, type ImageOperation } from '../../../core/imagery-operations.js';
import { verifyReceipt, type ReceiptVerdict, type VerifyReceiptOptions } from './receipt.js';
import { sha256Hex } from './crypto.js';
import { isObj } from './shapes.js';

export type RecomputeKind = 'recomputed' | 'differs' | 'upstream_changed' | 'inputs_unavailable' | 'not_recomputable';

export interface StepRecomputation {
  step_id: string;
  what: string;
  kind: RecomputeKind;
  detail: string;
  differences?: { field: string; recorded: unknown; recomputed: unknown }[];
  bound?: Record<string, unknown>;
}

export interface RecomputeOptions extends VerifyReceiptOptions {
  fetch: typeof fetch;
  /** `{z}/{x}/{y}` URL templates of tile upstreams by style, `*` for every style. */
  tileTemplates?: Readonly<Record<string, string>>;
  allowHttp?: boolean;
  /** Per request; default 30 s. */
  timeoutMs?: number;
  /** All bytes fetched; default 256 MiB. */
  maxBytes?: number;
}

export interface RecomputeResult {
  verdict: ReceiptVerdict;
  /** Null when the offline verification failed: nothing was fetched. */
  steps: StepRecomputation[] | null;
}

type Obj = Record<string, unknown>;

class Unavailable extends Error {}

const MAX_TILE_BYTES = 4 * 1024 * 1024;

/** Verifies the receipt offline, then (only when it is valid) recomputes each answered step. */
export async function recomputeReceipt(receipt: unknown, options: RecomputeOptions): Promise<RecomputeResult> {
  const { fetch: _fetch, tileTemplates: _t, allowHttp: _h, timeoutMs: _ms, maxBytes: _max, ...verifyOptions } = options;
  const verdict = verifyReceipt(receipt, verifyOptions);
  if (!verdict.ok) return { verdict, steps: null };
  const r = receipt as Obj;
  const job = r.job as Obj;
  const records = r.records as Obj[];
  // The step as the requester signed it, by position (the answer lists the steps in request order).
  const body = (r.request as Obj).body as Obj;
  const requested = Array.isArray(body.steps) ? (body.steps as unknown[]) : [];
  const get = getter(options);
  const steps: StepRecomputation[] = [];
  for (const [index, answer] of (job.steps as Obj[]).entries()) {
    const id = String(answer.id);
    const record = records.find((e) => e.role === 'step' && e.step_id === id)?.record as Obj | null | undefined;
    const payload = (isObj(record?.payload) ? record.payload : {}) as Obj;
    const what =
      answer.type === 'image_process' && typeof payload.operation === 'string'
        ? `image_process ${payload.operation}`
        : String(answer.type);
    let outcome: Omit<StepRecomputation, 'step_id' | 'what'>;
    const inputs = records.filter((e) => e.role === 'input' && e.step_id === id);
    try {
      if (answer.status === 'complete' && typeof answer.record_id === 'string' && !isObj(record)) {
        outcome = { kind: 'inputs_unavailable', detail: `its record ${answer.record_id} is not in the receipt yet` };
      } else if (answer.type === 'sensor_fusion' && inputs.some((e) => !isObj(e.record))) {
        outcome = {
          kind: 'inputs_unavailable',
          detail: `${inputs.filter((e) => !isObj(e.record)).length} of its signed readings are pending`,
        };
      } else {
        const request = requested[index];
        const step = { answer, record: record ?? null, payload, request: isObj(request) ? request : {} };
        outcome = await recomputeStep(step, get, options);
      }
    } catch (error) {
      // A fetch that failed says which and why; anything else (bytes that do not decode …) concludes nothing.
      outcome = {
        kind: 'inputs_unavailable',
        detail:
          error instanceof Unavailable ? error.message : `the recomputation could not run: ${(error as Error).message}`,
      };
    }
    steps.push({ step_id: id, what, ...outcome });
  }
  return { verdict, steps };
}

type Get = (url: string, range?: [number, number]) => Promise<Uint8Array>;

function getter(options: RecomputeOptions): Get {
  let budget = options.maxBytes ?? 256 * 1024 * 1024;
  const timeoutMs = options.timeoutMs ?? 30_000;
  return async (url, range) => {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new Unavailable(`${url.slice(0, 100)} is not a URL`);
    }
    if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && options.allowHttp)) {
      throw new Unavailable(`${parsed.origin}: only https URLs are fetched`);
    }
    const header = range ? `bytes=${range[0]}-${range[0] + range[1] - 1}` : undefined;
    const where = `GET ${url}${header ? ` ${header}` : ''}`;
    let res: Response;
    try {
      res = await options.fetch(url, {
        headers: header ? { range: header } : {},
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw new Unavailable(`${where}: ${(error as Error).message}`);
    }
    const expected = range ? 206 : 200;
    if (res.status !== expected) {
      await res.body?.cancel();
      throw new Unavailable(`${where}: answered HTTP ${res.status}`);
    }
    if (range && !new RegExp(`^bytes ${range[0]}-`).test(res.headers.get('content-range') ?? '')) {
      await res.body?.cancel();
      throw new Unavailable(`${where}: answered another range`);
    }
    const limit = Math.min(range ? range[1] : MAX_TILE_BYTES, budget);
    const chunks: Uint8Array[] = [];
    let size = 0;
    if (res.body) {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        size += chunk.byteLength;
        if (size > limit) throw new Unavailable(`${where}: more bytes than asked, or the byte budget is spent`);
        chunks.push(chunk);
      }
    }
    budget -= size;
    const out = new Uint8Array(size);
    let at = 0;
    for (const c of chunks) {
      out.set(c, at);
      at += c.byteLength;
    }
    return out;
  };
}

const isImageOperation = (v: string | undefined): v is ImageOperation =>
  (IMAGE_OPERATIONS as readonly (string | undefined)[]).includes(v);

async function recomputeStep(
  { answer, record, payload, request }: { answer: Obj; record: Obj | null; payload: Obj; request: Obj },
  get: Get,
  options: RecomputeOptions,
): Promise<Omit<StepRecomputation, 'step_id' | 'what'>> {
  if (answer.status !== 'complete') {
    const code = isObj(answer.error) ? String(answer.error.code) : String(answer.status);
    return { kind: 'not_recomputable', detail: `the step did not complete (${code})` };
  }
  switch (answer.type) {
    case 'inference': {
      const keys = ['model', 'provider', 'worker_pk', 'prompt_sha256', 'answer_sha256', 'tokens_in', 'tokens_out'];
      return {
        kind: 'not_recomputable',
        detail: "a model's answer is not a function of public inputs",
        bound: Object.fromEntries(keys.filter((k) => payload[k] !== undefined).map((k) => [k, payload[k]])),
      };
    }
    case 'sensor_fusion': {
      const ids = isObj(answer.output) && Array.isArray(answer.output.record_ids) ? answer.output.record_ids : [];
      return { kind: 'recomputed', detail: `from its ${ids.length} signed readings by the fusion_inputs check` };
    }
    case 'tile_render':
      return recomputeTile(payload, get, options);
    case 'image_process': {
      const operation = /^imagery\/(.+)$/.exec(String(record?.payload_type))?.[1];
      if (!isImageOperation(operation)) {
        return { kind: 'not_recomputable', detail: `no recomputation is defined for ${String(record?.payload_type)}` };
      }
      // Loaded on first use: it decodes GeoTIFFs (geotiff, proj4, h3-js) and hashes with node:crypto, which the
      // rest of the client (its verifier included) does without, in Node and browsers alike.
      const { recomputeImageStep } = await import('../../../activities/recompute/imagery.js');
      return recomputeImageStep(
        operation,
        { payload, output: isObj(answer.output) ? answer.output : {}, cost: answer.cost, request },
        (href, offset, length) => get(href, [offset, length]),
      );
    }
    default:
      return { kind: 'not_recomputable', detail: `no recomputation is defined for ${String(answer.type)}` };
  }
}

async function recomputeTile(
  payload: Obj,
  get: Get,
  options: RecomputeOptions,
): Promise<Omit<StepRecomputation, 'step_id' | 'what'>> {
  if (payload.kind !== 'render') return { kind: 'not_recomputable', detail: 'not a tile_render record' };
  const template = options.tileTemplates?.[String(payload.style)] ?? options.tileTemplates?.['*'];
  if (template === undefined) {
    return {
      kind: 'inputs_unavailable',
      detail: `the record names the tile upstream by host only (${String(payload.upstream_host)}); give its URL template`,
    };
  }
  const url = template
    .replace('{z}', String(payload.zoom))
    .replace('{x}', String(payload.x))
    .replace('{y}', String(payload.y));
  const host = new URL(url).host;
  if (host !== payload.upstream_host) {
    return {
      kind: 'inputs_unavailable',
      detail: `the template names ${host}, the record's upstream is ${String(payload.upstream_host)}`,
    };
  }
  const hash = sha256Hex(await get(url));
  if (hash !== payload.tile_sha256) {
    return {
      kind: 'upstream_changed',
      detail: `tile_sha256: recorded ${String(payload.tile_sha256).slice(0, 12)}…, ${host} now serves ${hash.slice(0, 12)}…`,
    };
  }
  if (payload.sha256 !== payload.tile_sha256) {
    return {
      kind: 'not_recomputable',
      detail: 'the upstream tile matches tile_sha256; this client does not redraw annotations',
    };
  }
  return { kind: 'recomputed', detail: 'the upstream tile matches tile_sha256' };
}

/** One line per step, as `geofabric receipt verify --recompute` prints it. */
export function recomputeLine(step: StepRecomputation): string {
  const cut = (v: unknown) => {
    if (typeof v === 'string' && /^[0-9a-f]{64}$/.test(v)) return `${v.slice(0, 12)}…`;
    const text = v === undefined ? 'absent' : JSON.stringify(v);
    return text.length > 80 ? `${text.slice(0, 79)}…` : text;
  };
  const head = `${step.step_id} (${step.what}): `;
  if (step.kind === 'differs') {
    const diffs = (step.differences ?? []).map((d) => `${d.field}: ${cut(d.recorded)} vs ${cut(d.recomputed)}`);
    return `${head}differs (${diffs.join('; ') || step.detail})`;
  }
  if (step.kind === 'not_recomputable') {
    const bound = Object.entries(step.bound ?? {})
      .map(([k, v]) => `${k} ${typeof v === 'string' ? cut(v).replace(/^"|"$/g, '') : cut(v)}`)
      .join(', ');
    return `${head}not recomputable (${step.detail}${bound ? `; bound: ${bound}` : ''})`;
  }
  return `${head}${step.kind.replace('_', ' ')} (${step.detail})`;
}
