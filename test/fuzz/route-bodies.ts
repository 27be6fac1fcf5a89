/**
 * JSON bodies for the fuzz suites that look like what a route reads, with hostile values in its fields:
 * near enough to valid that they pass JSON parsing and the signature gate and reach the route's own
 * pre-flight and handler, where wrong types, bounds and shapes are judged. Routes the table does not know
 * get generic objects with the union of all known field names.
 */
import fc from 'fast-check';
import { DEFAULT_JOB_CELL } from '../../core/h3-cell.js';
import { IMAGE_OPERATIONS } from '../../core/imagery-operations.js';
import { STEP_TYPES } from '../../core/step-types/index.js';
import type { KeyPair } from '../../core/identity.js';
import { signRecord } from '../../core/proof-record.js';
import { createSeal } from '../../core/seal.js';
import { TILE_STYLES } from '../../core/tile-styles.js';
import { TOOL_IDS } from '../../core/tool-registry.js';
import {
  PROTO_KEYS,
  POLLUTION_MARKER,
  anyJson,
  hostileCell,
  hostileDate,
  hostilePublicKey,
  validCell,
} from './hostile-values.js';

/** A field value: usually hostile for any field (wrong type, out of range, huge), sometimes plausible. */
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: anyJson },
  fc.constantFrom(null, true, false, 0, -1, 1, 1.5, 1e308, -1e308, 2 ** 53 + 2, '', ' ', 'null', 'NaN'),
  fc.constantFrom(21, -1, 101, 0.0001, 32_769, 1_000_001, 4096.5),
  hostileCell,
  hostileDate,
  hostilePublicKey,
  fc.integer({ min: 1_000, max: 300_000 }).map((n) => 'x'.repeat(n)),
  fc.integer({ min: 100, max: 20_000 }).map((n) => Array.from({ length: n }, (_, i) => i)),
  fc.constant({ [POLLUTION_MARKER]: true }),
);

/** An object with some of `fields` (plausible or hostile values), maybe extra and prototype keys. */
function objectOf(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<Record<string, unknown>> {
  const entries = Object.entries(fields).map(([key, plausible]) =>
    fc.option(fc.tuple(fc.constant(key), fc.oneof({ weight: 3, arbitrary: plausible }, hostileValue)), {
      nil: undefined,
    }),
  );
  const extra = fc.option(
    fc.tuple(fc.oneof(fc.constantFrom(...PROTO_KEYS), fc.string({ maxLength: 12 })), hostileValue),
    { freq: 3, nil: undefined },
  );
  return fc.tuple(fc.tuple(...entries), extra).map(([present, more]) => {
    const out: Record<string, unknown> = {};
    for (const entry of [...present, more]) {
      // defineProperty keeps "__proto__" an own data key, as JSON.parse would make it.
      if (entry !== undefined)
        Object.defineProperty(out, entry[0], { value: entry[1], enumerable: true, writable: true, configurable: true });
    }
    return out;
  });
}

const stepId = fc.constantFrom('a', 'b', 'c', 'ask', 'map', 'x'.repeat(65), '', 'a b', '__proto__', 'constructor');
const stepType = fc.constantFrom(...STEP_TYPES, 'teleport', '');

/** band_math expressions: well formed, malformed, too long, too deep, unknown bands, not text. */
const hostileExpression = fc.constantFrom(
  '(B08-B04)/(B08+B04)',
  'B03 / (B11 - B11)',
  '(B08-B04',
  'B09 + B04',
  'constructor',
  '__proto__ * B04',
  '('.repeat(40) + 'B04' + ')'.repeat(40),
  '-'.repeat(40) + 'B04',
  'B04+'.repeat(100) + 'B04',
  '1e999 * B04',
  '',
  42,
  null,
);

const step = objectOf({
  id: stepId,
  type: stepType,
  depends_on: stepId,
  model: fc.constantFrom('tinyllama', 'lfm2.5-1.2b-instruct', 'llama-3.3-70b-versatile', 'gpt-9', ''),
  messages: fc.array(
    objectOf({ role: fc.constantFrom('user', 'system', 'root'), content: fc.string({ maxLength: 40 }) }),
    {
      maxLength: 3,
    },
  ),
  max_tokens: fc.constantFrom(1, 16, 32_768, 32_769, 0, -5),
  operation: fc.constantFrom(...IMAGE_OPERATIONS, 'x'),
  expression: hostileExpression,
  center_cell: hostileCell,
  zoom: fc.constantFrom(-1, 0, 10, 20, 21, 1.5),
  style: fc.constantFrom(...TILE_STYLES, 'neon'),
  context: objectOf({
    h3_cell: hostileCell,
    epoch: fc.constantFrom(0, -1, 1.5, 2 ** 60),
    date_from: hostileDate,
    date_to: hostileDate,
    area: fc.constantFrom(
      { type: 'Point', coordinates: [12.5, 41.9] },
      { type: 'Point', coordinates: [500, 41.9] },
      {
        type: 'Polygon',
        coordinates: [
          [
            [0, 0],
            [1, 1],
            [1, 0],
            [0, 1],
            [0, 0],
          ],
        ],
      },
      { type: 'LineString', coordinates: [[0, 0]] },
    ),
  }),
  tools: fc.array(fc.constantFrom(...TOOL_IDS, 'rm-rf', ''), { maxLength: 3 }),
});

const record = objectOf({
  version: fc.constantFrom(1, 2),
  id: fc.constantFrom('job-1:step-1', 'x'.repeat(129), '', 'a b'),
  address: objectOf({ h3_cell: hostileCell, epoch: fc.constantFrom(0, -1, 2 ** 53), pk: hostilePublicKey }),
  collection_type: fc.constantFrom('inference', 'tile', 'compute_job', 'imagery', 'nope'),
  payload_type: fc.constantFrom('hive/inference', 'tile/raster', 'compute/job', 'imagery/ndvi', 'x/y'),
  payload: anyJson,
  seq: fc.constantFrom(1, 0, -1, 1.5, 2 ** 53),
  written_at: hostileDate,
  record_hash: fc.constantFrom('0'.repeat(64), 'g'.repeat(64), ''),
  signature: fc.constantFrom('0'.repeat(128), ''),
});

const seal = objectOf({
  version: fc.constantFrom(1, 2),
  sealer_pk: hostilePublicKey,
  epoch: fc.constantFrom(0, -1, 5, 2 ** 53),
  record_count: fc.constantFrom(0, 1, -1),
  first_seq: fc.constantFrom(null, 1, 0),
  last_seq: fc.constantFrom(null, 1, 0),
  merkle_root: fc.constantFrom('0'.repeat(64), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'),
  prev_epoch_hash: fc.constantFrom('0'.repeat(64), ''),
  sealed_at: hostileDate,
  seal_hash: fc.constantFrom('0'.repeat(64)),
  signature: fc.constantFrom('0'.repeat(128)),
});

const chatMessage = objectOf({
  role: fc.constantFrom('user', 'system', 'assistant', 'tool', 'developer', 'root'),
  content: fc.oneof(
    fc.string({ maxLength: 40 }),
    fc.array(objectOf({ type: fc.constantFrom('text', 'image_url'), text: fc.string({ maxLength: 20 }) }), {
      maxLength: 3,
    }),
  ),
  tool_call_id: fc.string({ maxLength: 10 }),
  tool_calls: fc.array(anyJson, { maxLength: 2 }),
  name: fc.string({ maxLength: 10 }),
});

/** Near-valid bodies per route pattern (POST routes); the signing fields are added by the caller. */
const BODIES: Record<string, fc.Arbitrary<Record<string, unknown>>> = {
  '/v1/compute': objectOf({
    h3_cell: hostileCell,
    steps: fc.array(step, { minLength: 1, maxLength: 4 }),
    budget_credits: fc.constantFrom(0.1, 0, -1, 1e6, 1e7, 0.0000001),
    nonce: fc.string({ maxLength: 10 }),
  }),
  '/v1/imagery/process': objectOf({
    operation: fc.constantFrom(...IMAGE_OPERATIONS, 'NDVI'),
    expression: hostileExpression,
    h3_cell: fc.oneof(hostileCell, fc.constant(DEFAULT_JOB_CELL)),
    date_from: hostileDate,
    date_to: hostileDate,
    cloud: fc.constantFrom(0, 50, 100, 101, -1, '50'),
    limit: fc.constantFrom(1, 100, 101, 0, '5'),
  }),
  '/v1/chat/completions': objectOf({
    model: fc.constantFrom('tinyllama', 'lfm2.5-1.2b-instruct', 'gpt-9', ''),
    messages: fc.array(chatMessage, { minLength: 1, maxLength: 3 }),
    stream: fc.boolean(),
    max_tokens: fc.constantFrom(1, 64, 0, 131_073),
    temperature: fc.constantFrom(0, 2, 2.1, -0.1),
    n: fc.constantFrom(1, 2),
    stop: fc.oneof(fc.string({ maxLength: 5 }), fc.array(fc.string({ maxLength: 5 }), { maxLength: 6 })),
    tools: fc.array(anyJson, { maxLength: 2 }),
    tool_choice: fc.constantFrom('auto', 'none', 'required', 'sometimes'),
    response_format: fc.constantFrom({ type: 'text' }, { type: 'json_object' }, { type: 'xml' }),
    h3_cell: hostileCell,
    svc: objectOf({ locations: fc.boolean(), tools: fc.array(fc.constantFrom(...TOOL_IDS, 'nope'), { maxLength: 3 }) }),
  }),
  '/store/sync': objectOf({ records: fc.array(record, { minLength: 0, maxLength: 3 }) }),
  '/store/epochs': objectOf({ seals: fc.array(seal, { minLength: 0, maxLength: 3 }) }),
  '/store/proof/:record_id': objectOf({ record_id: fc.constantFrom('r', 'x'.repeat(513)) }),
  '/svc/workers/register': objectOf({
    h3_cell: fc.oneof(hostileCell, validCell),
    models: fc.array(fc.constantFrom('tinyllama', 'lfm2.5-1.2b-instruct', 'nope', ''), { maxLength: 3 }),
    tools: fc.array(fc.constantFrom(...TOOL_IDS, 'nope'), { maxLength: 3 }),
    hardware: objectOf({
      platform: fc.constantFrom('linux-x64', '', '-x'),
      gpu: fc.constantFrom(null, 'rtx', ''),
      vram_gb: fc.constantFrom(0, 8, -1, 5000),
      ram_gb: fc.constantFrom(16, 0, 70_000),
      cores: fc.constantFrom(8, 0, 1.5),
    }),
    hardware_tier: fc.constantFrom(1, 2, 3, 4, 0),
    relay: fc.boolean(),
    version: fc.constantFrom('0.1.0', '1', 'v1.0.0', '0.1.0-rc.1+build'),
  }),
  '/svc/workers/heartbeat': objectOf({ seq: fc.constantFrom(1, 2, 0, -1, 1.5, 2 ** 53, Date.parse('2026-03-01')) }),
  '/svc/workers/leave': objectOf({ seq: fc.constantFrom(1, 2, 0, -1, 1.5, 2 ** 53, Date.parse('2026-03-01')) }),
};

const ANY_FIELDS = Object.fromEntries(
  [
    'h3_cell',
    'cell',
    'steps',
    'operation',
    'messages',
    'model',
    'records',
    'seals',
    'seq',
    'zoom',
    'limit',
    'from',
    'to',
    'agent_pk',
  ].map((name) => [name, hostileValue]),
);

/** Valid bodies per route (signing fields aside), so that one mutation is judged by the check that owns it. */
function validBodies(key: KeyPair, nowMs: number): Record<string, Record<string, unknown>[]> {
  const now = new Date(nowMs).toISOString();
  const record = signRecord(key.secretKey, {
    version: 1,
    id: 'fuzz-record',
    address: { h3_cell: DEFAULT_JOB_CELL, epoch: 100, pk: key.publicKey },
    collection_type: 'inference',
    payload_type: 'hive/inference',
    payload: { model: 'tinyllama', tokens: 3 },
    seq: 1,
    written_at: now,
  });
  const seal = createSeal(key.secretKey, { epoch: 99, records: [], prevSealHash: '0'.repeat(64), sealedAt: now });
  const ask = { id: 'ask', type: 'inference', messages: [{ role: 'user', content: 'three parks in Rome' }] };
  return {
    '/v1/compute': [
      { h3_cell: DEFAULT_JOB_CELL, steps: [ask], budget_credits: 0.1 },
      {
        steps: [
          {
            id: 'ndvi',
            type: 'image_process',
            operation: 'ndvi',
            context: { h3_cell: DEFAULT_JOB_CELL, date_from: '2026-02-01', date_to: '2026-02-28' },
          },
          { ...ask, depends_on: 'ndvi' },
          {
            id: 'map',
            type: 'tile_render',
            depends_on: 'ask',
            center_cell: DEFAULT_JOB_CELL,
            zoom: 10,
            style: 'osm-bright',
          },
        ],
        budget_credits: 1,
      },
    ],
    '/v1/imagery/process': [
      { operation: 'ndvi', h3_cell: DEFAULT_JOB_CELL, date_from: '2026-02-01', date_to: '2026-02-28' },
      { operation: 'scene_search', h3_cell: DEFAULT_JOB_CELL, cloud: 30, limit: 5 },
    ],
    '/v1/chat/completions': [
      { model: 'tinyllama', messages: [{ role: 'user', content: 'three parks in Rome' }] },
      {
        messages: [
          { role: 'system', content: 'be brief' },
          { role: 'user', content: 'hi' },
        ],
        stream: true,
        max_tokens: 16,
      },
    ],
    '/openeo/1.2/result': [
      {
        process: {
          process_graph: {
            load: {
              process_id: 'load_collection',
              arguments: {
                id: 'SENTINEL2_L2A',
                spatial_extent: { west: 12.49, south: 41.89, east: 12.5, north: 41.9 },
                temporal_extent: ['2026-02-01', '2026-03-01'],
                bands: ['B04', 'B08'],
              },
            },
            ndvi: { process_id: 'ndvi', arguments: { data: { from_node: 'load' } } },
            mean: {
              process_id: 'reduce_dimension',
              arguments: {
                data: { from_node: 'ndvi' },
                dimension: 't',
                reducer: {
                  process_graph: {
                    m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true },
                  },
                },
              },
            },
            save: {
              process_id: 'save_result',
              arguments: { data: { from_node: 'mean' }, format: 'GTiff' },
              result: true,
            },
          },
        },
        budget: 1,
      },
    ],
    // A batch job's body is a synchronous request's with a title (docs/protocol.md §16.11); PATCH takes a part.
    '/openeo/1.2/jobs': [
      {
        title: 'fuzzed',
        process: {
          process_graph: {
            load: {
              process_id: 'load_collection',
              arguments: {
                id: 'SENTINEL2_L2A',
                spatial_extent: { west: 12.49, south: 41.89, east: 12.5, north: 41.9 },
                temporal_extent: ['2026-02-01', '2026-03-01'],
                bands: ['B04'],
              },
            },
            save: {
              process_id: 'save_result',
              arguments: { data: { from_node: 'load' }, format: 'JSON' },
              result: true,
            },
          },
        },
      },
    ],
    '/openeo/1.2/jobs/:job_id': [{ title: 'renamed', budget: 2 }],
    '/store/sync': [{ records: [record] }],
    '/store/epochs': [{ seals: [seal] }],
    '/store/proof/:record_id': [{ record_id: 'no-such-record', created_at: now }],
    '/svc/workers/register': [
      {
        h3_cell: DEFAULT_JOB_CELL,
        models: ['tinyllama'],
        tools: ['web-search'],
        hardware: { platform: 'linux-x64', gpu: null, vram_gb: 0, ram_gb: 16, cores: 8 },
        hardware_tier: 1,
        relay: false,
        version: '0.1.0',
        created_at: now,
      },
    ],
    '/svc/workers/heartbeat': [{ seq: nowMs }],
    '/svc/workers/leave': [{ seq: nowMs, created_at: now }],
  };
}

/** Every path (as keys) to a value inside `value`, up to `depth` levels: where one mutation may land. */
function pathsOf(value: unknown, depth = 4, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [prefix];
  if (depth === 0 || typeof value !== 'object' || value === null) return out;
  const entries: [string | number, unknown][] = Array.isArray(value)
    ? value.map((item, i) => [i, item])
    : Object.entries(value as Record<string, unknown>);
  for (const [key, child] of entries) out.push(...pathsOf(child, depth - 1, [...prefix, key]));
  return out;
}

/** A deep copy of `value` with the node at `path` changed by `op`. */
function mutateAt(
  value: unknown,
  path: (string | number)[],
  op: 'replace' | 'delete' | 'extra',
  replacement: unknown,
  extraKey: string,
): unknown {
  const copy = structuredClone(value);
  if (path.length === 0) {
    return op === 'replace' ? replacement : copy;
  }
  let parent = copy as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
  const last = path[path.length - 1] as string | number;
  if (op === 'replace') parent[last] = replacement;
  else if (op === 'delete') {
    if (Array.isArray(parent)) parent.splice(Number(last), 1);
    else delete parent[last];
  } else if (!Array.isArray(parent)) {
    Object.defineProperty(parent, extraKey, {
      value: replacement,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return copy;
}

/** A valid body as is, or with exactly one value replaced, removed, or one key added beside it. */
function mutatedOnce(base: Record<string, unknown>): fc.Arbitrary<Record<string, unknown>> {
  const paths = pathsOf(base);
  return fc
    .tuple(
      fc.nat(paths.length - 1),
      fc.constantFrom('keep', 'replace', 'replace', 'delete', 'extra'),
      hostileValue,
      fc.oneof(fc.constantFrom(...PROTO_KEYS), fc.string({ maxLength: 10 })),
    )
    .map(([at, op, replacement, extraKey]) => {
      if (op === 'keep') return structuredClone(base);
      const mutated = mutateAt(base, paths[at] as (string | number)[], op, replacement, extraKey);
      return typeof mutated === 'object' && mutated !== null && !Array.isArray(mutated)
        ? (mutated as Record<string, unknown>)
        : { value: mutated };
    });
}

/**
 * A body object for `pattern`: a valid body with one mutation (the check that owns the field judges it), a
 * near-valid one with several hostile fields, or generic fields for a route this table does not know.
 */
export function bodyFor(pattern: string, key: KeyPair, nowMs: number): fc.Arbitrary<Record<string, unknown>> {
  const valid = validBodies(key, nowMs)[pattern] ?? [];
  const shaped = BODIES[pattern] ?? objectOf(ANY_FIELDS);
  if (valid.length === 0) return shaped;
  return fc.oneof(
    { weight: 2, arbitrary: fc.constantFrom(...valid).chain(mutatedOnce) },
    { weight: 1, arbitrary: shaped },
  );
}

/** `created_at` for a signed body: mostly absent or fresh; else stale, future or malformed (vs the server clock). */
export const createdAt = (nowMs: number): fc.Arbitrary<string | undefined> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constant(undefined) },
    { weight: 3, arbitrary: fc.constant(new Date(nowMs).toISOString()) },
    fc.integer({ min: -3_600_000, max: 3_600_000 }).map((d) => new Date(nowMs + d).toISOString()),
    hostileDate,
  );
