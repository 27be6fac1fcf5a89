/**
 * The one table of error codes and their HTTP statuses (docs/protocol.md §7, plus the codes Geofabric adds).
 * Every error body is `{ error: code, detail?: text }`; nothing else reaches a client.
 */
export const ERROR_STATUS = {
  // docs/protocol.md §7
  invalid_model: 400,
  invalid_cell: 400,
  // A required `cell` query parameter is missing (docs/protocol.md §7 spells it as a sentence; a code here is snake_case).
  cell_required: 400,
  unauthorized: 401,
  signature_required: 401,
  no_workers: 503,
  job_timeout: 504,
  // Gate 1
  invalid_signature: 401,
  stale_request: 401,
  invalid_public_key: 400,
  // Gate 2
  invalid_jurisdiction: 400,
  invalid_tier: 400,
  // Gate 3
  delegation_invalid: 403,
  delegation_required: 403,
  rate_limit: 429,
  // Gate 5: the tool policy (docs/security.md) forbids a tool for the cell's jurisdiction or the caller's tier
  tool_not_permitted: 403,
  // Gate 4 and request validation
  cyclic_dependency: 400,
  invalid_geometry: 400,
  invalid_request: 400,
  step_type_unavailable: 400,
  budget_exceeded: 402,
  // Proof store
  invalid_record: 400,
  invalid_seal: 400,
  record_not_found: 404,
  // Compute jobs
  job_not_found: 404,
  // A job stored before receipts existed: its signed request was not kept (docs/protocol.md §15).
  receipt_unavailable: 404,
  step_failed: 502,
  // A step answered an output that is not canonical JSON (a non-finite number…): it cannot be hashed, so it fails.
  invalid_step_output: 502,
  record_conflict: 409,
  epoch_sealed: 409,
  seal_mismatch: 409,
  // A seal of an epoch whose window has not ended yet: it could not cover the epoch's later records.
  epoch_open: 409,
  // A record older than the sync window pushed without its writer's seal of its epoch (docs/security.md).
  seal_required: 409,
  // A push to the proof store by a key that may not write there, or of records it may not write; a blob upload
  // (PUT /store/blobs) by a key that is not a registered worker.
  writer_not_allowed: 403,
  // Tiles and imagery
  invalid_zoom: 400,
  invalid_style: 400,
  invalid_format: 400,
  invalid_rings: 400,
  invalid_hours: 400,
  invalid_days: 400,
  invalid_date: 400,
  invalid_cloud: 400,
  invalid_limit: 400,
  invalid_operation: 400,
  no_scenes: 404,
  // flood_classify: the chosen scene cannot answer for the cell (bands missing or not over HTTP(S), cell outside
  // the image, a reference scene on another tile); there is no metadata estimate to fall back on.
  imagery_unavailable: 422,
  // The tile upstream has no tile at that place and zoom (it answered 404).
  tile_not_found: 404,
  upstream_unavailable: 502,
  upstream_timeout: 504,
  // Swarm, inference and tools
  quota_exceeded: 429,
  worker_not_found: 404,
  invalid_worker: 400,
  tool_not_found: 404,
  backbone_unavailable: 502,
  runtime_unavailable: 502,
  // Telemetry (docs/protocol.md §2.10): per-reading refusals, listed in the answer of POST /v1/telemetry
  unknown_quantity: 400,
  unit_mismatch: 400,
  value_out_of_range: 400,
  reading_in_future: 400,
  reading_too_old: 409,
  // Every reading of a batch was refused (the answer lists why, reading by reading).
  readings_refused: 422,
  // A sensor_fusion step found no signed reading of its quantity in its cells and window.
  no_readings: 404,
  // Perception and compliance service
  agent_not_found: 404,
  approval_not_required: 400,
  origin_not_allowed: 403,
  host_not_allowed: 403,
  // Agent tokens and authorization mappings
  token_invalid: 401,
  token_agent_mismatch: 403,
  coaz_error: 400,
  coaz_denied: 403,
  // Transport
  invalid_json: 400,
  unsupported_media_type: 415,
  payload_too_large: 413,
  query_too_large: 414,
  request_timeout: 408,
  headers_too_large: 431,
  not_found: 404,
  method_not_allowed: 405,
  internal_error: 500,
  // The store refused a write for want of space (disk full, or STORE_MAX_MB): nothing was half-written.
  storage_full: 507,
  // The store cannot be reached right now (MongoDB down, SQLite locked past its busy timeout): retry later.
  store_unavailable: 503,
  // A request that arrived after shutdown began (on a kept-alive connection): retry on a new connection.
  shutting_down: 503,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorBody {
  error: ErrorCode;
  detail?: string;
}

/** A failure that is safe to show a client: a code from the table and a human-readable detail. */
export class ServiceError extends Error {
  readonly status: number;
  readonly headers: Record<string, string>;

  constructor(
    readonly code: ErrorCode,
    readonly detail?: string,
    headers: Record<string, string> = {},
    /** The request field at fault, when one is: OpenAI-style bodies carry it as `param`. */
    readonly param?: string,
  ) {
    super(detail ? `${code}: ${detail}` : code);
    this.name = 'ServiceError';
    this.status = ERROR_STATUS[code];
    this.headers = headers;
  }

  toBody(): ErrorBody {
    return this.detail === undefined ? { error: this.code } : { error: this.code, detail: this.detail };
  }
}
