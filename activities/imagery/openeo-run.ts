/**
 * One run of an openEO process graph on the imagery catalog (docs/protocol.md §16.5–16.7), shared by synchronous
 * `POST /result` and batch jobs: the graph is evaluated on a cube session bounded by a pixel budget and a credit
 * budget, the result is encoded in the format `save_result` names, and the file is written as a signed
 * `imagery/openeo_result` proof record (its SHA-256, the scenes, every byte range read with its hash, the graph's
 * hash, the cost, who asked). PNG encoding is passed in (it lives with the gateway's image codec).
 */
import { OpenEoError } from '../../core/openeo/errors.js';
import { evaluateGraph, type ProcessGraph, type Registry } from '../../core/openeo/graph.js';
import { encodeGeoTiff, resultJson } from '../../core/openeo/output.js';
import { isSavedResult, type OpenEoEnv, type SavedResult } from '../../core/openeo/processes.js';
import { sha256Hex } from '../../core/hash.js';
import { imageCost } from '../../core/pricing.js';
import type { ProofRecord } from '../../core/proof-types.js';
import type { ImageryActivities } from './index.js';

export const OPENEO_MEDIA_TYPES = {
  GTiff: 'image/tiff; application=geotiff',
  PNG: 'image/png',
  JSON: 'application/json',
} as const;

/** Who asked for a result (docs/protocol.md §16.7): the API key, and the Ed25519 signature when the body was signed. */
export interface OpenEoAuthentication {
  api_key_id: string | null;
  /** Present when the request body was signed (`X-Idn-Signature`): the requester's key and the signature. */
  requester_pk?: string;
  request_signature?: string;
}

export interface OpenEoRunInput {
  graph: ProcessGraph;
  graphHash: string;
  budget: number | null;
  /** The values (x × y × t × bands) the run may load; ProcessGraphComplexity beyond, `tooComplex` its message. */
  maxSamples: number;
  tooComplex: (samples: number) => string;
  recordId: string;
  cell: string;
  authenticatedBy: OpenEoAuthentication;
  requestId: string | null;
  jobId: string | null;
  stepId: string | null;
}

export interface OpenEoRunOutput {
  bytes: Uint8Array;
  format: SavedResult['format'];
  mediaType: string;
  sha256: string;
  cost: number;
  record: ProofRecord;
}

export async function runOpenEoGraph(
  deps: {
    imagery: ImageryActivities;
    registry: Registry<OpenEoEnv>;
    encodePng: (value: unknown) => Promise<Uint8Array>;
    clock: () => number;
  },
  input: OpenEoRunInput,
): Promise<OpenEoRunOutput> {
  const { imagery } = deps;
  const started = deps.clock();
  const session = imagery.cubes.session((samples) => {
    if (samples > input.maxSamples) {
      throw new OpenEoError('ProcessGraphComplexity', input.tooComplex(samples));
    }
    if (input.budget !== null && imageCost(samples / 1e6) > input.budget) {
      throw new OpenEoError(
        'PaymentRequired',
        `The budget required to fulfil the request is not sufficient: loading ${samples} values costs ` +
          `${imageCost(samples / 1e6)} credits, above the budget of ${input.budget}.`,
      );
    }
  });
  const value = await evaluateGraph(input.graph, deps.registry, { loadCollection: (r) => session.load(r) });
  const saved: SavedResult = isSavedResult(value)
    ? value
    : { kind: 'save_result', data: value, format: 'JSON', options: {} };
  const bytes =
    saved.format === 'GTiff'
      ? encodeGeoTiff(saved.data)
      : saved.format === 'PNG'
        ? await deps.encodePng(saved.data)
        : new TextEncoder().encode(JSON.stringify(resultJson(saved.data)));
  const megapixels = session.samples() / 1e6;
  const cost = imageCost(megapixels);
  const sha256 = sha256Hex(bytes);
  const mediaType = OPENEO_MEDIA_TYPES[saved.format];
  const record = await imagery.proofs.write({
    id: input.recordId,
    h3_cell: input.cell,
    collection_type: 'imagery',
    payload_type: 'imagery/openeo_result',
    payload: {
      version: 1,
      api: 'openEO API 1.2.0',
      process_graph_sha256: input.graphHash,
      result: { sha256, bytes: bytes.length, format: saved.format, media_type: mediaType },
      catalog: imagery.catalog,
      searches: session.searches(),
      scenes: session.scenes(),
      assets: session.reads(),
      samples: session.samples(),
      megapixels,
      cost,
      authenticated_by: input.authenticatedBy,
      request_id: input.requestId,
      processing_ms: Math.max(0, deps.clock() - started),
      job_id: input.jobId,
      step_id: input.stepId,
    },
  });
  return { bytes, format: saved.format, mediaType, sha256, cost, record };
}

/** Stops an estimate once the catalog has said how many scenes a load would read. */
class EstimateReached extends Error {}

/**
 * The values a graph's first `load_collection` would load (docs/protocol.md §16.11, `GET /jobs/{id}/estimate`):
 * its extent and bands times the scenes the catalog finds, asked of the catalog but without reading a pixel.
 */
export async function estimateOpenEoGraph(
  deps: { imagery: ImageryActivities; registry: Registry<OpenEoEnv> },
  graph: ProcessGraph,
): Promise<number> {
  let asked = 0;
  let samples = 0;
  const session = deps.imagery.cubes.session((values) => {
    samples = values;
    // The first ask is from the box alone; the second counts the scenes found.
    if (++asked === 2) throw new EstimateReached();
  });
  try {
    await evaluateGraph(graph, deps.registry, { loadCollection: (r) => session.load(r) });
  } catch (error) {
    if (!(error instanceof EstimateReached)) throw error;
  }
  return samples;
}
