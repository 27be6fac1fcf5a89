/**
 * The gateway's API reference as an OpenAPI 3.1 document, generated from the routes: method,
 * path and auth from each RouteSpec, everything else from its `docs`, schemas by zod's own `z.toJSONSchema`
 * (JSON Schema draft 2020-12, the dialect of OpenAPI 3.1; requests as zod's input type, answers as its output).
 * Pure and deterministic: the same routes give the same bytes, so the document can carry a stable ETag.
 */
import { z, type ZodType } from 'zod';
import { ERROR_STATUS, type ErrorCode } from '../core/errors.js';
import { openAiError } from '../core/openai-errors.js';
import { OPENEO_ERROR_STATUS, openEoError } from '../core/openeo/errors.js';
import { ServiceError } from '../core/errors.js';
import { NAMED_SCHEMAS } from './openapi-schemas.js';
import type { ResponseDocs, RouteDocs, RouteSpec } from './route-spec.js';

type Json = Record<string, unknown>;

export const TAGS: readonly { name: string; description: string }[] = [
  {
    name: 'Compute',
    description: 'Signed compound jobs: inference, tiles, imagery steps in one proof (docs/protocol.md §2.1–2.3)',
  },
  {
    name: 'Chat',
    description: 'OpenAI-compatible chat completions and models, with an API key (docs/protocol.md §4.1, §5.3)',
  },
  {
    name: 'Tiles',
    description: 'Map tiles by H3 cell with proof headers, grids and statistics (docs/protocol.md §2.4)',
  },
  { name: 'Imagery', description: 'Sentinel-2 scene search, NDVI and processing (docs/protocol.md §2.5)' },
  { name: 'Telemetry', description: 'Signed IoT sensor readings and their GeoJSON listing (docs/protocol.md §2.10)' },
  { name: 'Swarm', description: 'Swarm status, model marketplace and the inference audit (docs/protocol.md §4.1)' },
  { name: 'Workers', description: 'Worker registration, heartbeats and earnings (docs/protocol.md §1.4–1.6, 2.7)' },
  { name: 'Tools', description: 'The tool registry (docs/protocol.md §2.7)' },
  { name: 'Proof store', description: 'Records, sealed epochs and Merkle proofs (docs/protocol.md §2.6)' },
  { name: 'Dashboard', description: 'The operator dashboard and its data' },
  { name: 'Service', description: 'Health, metrics and this reference' },
  {
    name: 'openEO',
    description:
      "The openEO API 1.2.0 under /openeo/1.2 (docs/protocol.md §16): openEO's error shape `{ id, code, message, links }`",
  },
];

const SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';
const ERROR_REF = '#/components/schemas/Error';
const OPENAI_ERROR_REF = '#/components/schemas/OpenAiError';
const OPENEO_ERROR_REF = '#/components/schemas/OpenEoError';

/** Headers any request may carry (docs/protocol.md §4.1 note 3): they feed gates 2 and 3. */
const SHARED_HEADERS: readonly { key: string; name: string; description: string }[] = [
  {
    key: 'Jurisdiction',
    name: 'x-svc-jurisdiction',
    description: 'Restrict the job to workers in a jurisdiction (EU, US, IT …)',
  },
  { key: 'H3Cell', name: 'x-svc-h3-cell', description: 'The H3 cell the request is about (gate 2)' },
  { key: 'MinTier', name: 'x-svc-min-tier', description: 'Minimum worker trust tier' },
  {
    key: 'DelegationCert',
    name: 'x-svc-delegation-cert',
    description: 'Base64 of a delegation certificate or chain (root first) tracing the agent to a human (gate 3)',
  },
];

/**
 * Codes the gates, the request limits and body parsing answer, by what the route declares (api/gates.ts,
 * api/rate-limit.ts, api/http-limits.ts, api/json-body.ts).
 */
function gateErrors(spec: RouteSpec<unknown>): ErrorCode[] {
  const codes: ErrorCode[] = ['invalid_cell', 'invalid_jurisdiction', 'invalid_tier', 'delegation_invalid'];
  if (spec.auth === 'signed') {
    codes.push('signature_required', 'invalid_signature', 'stale_request', 'invalid_public_key', 'delegation_required');
  }
  if (spec.auth === 'api_key' || spec.auth === 'openeo') codes.push('unauthorized');
  if (spec.jsonBody) {
    codes.push('invalid_json', 'payload_too_large', 'unsupported_media_type', 'invalid_geometry', 'request_timeout');
    codes.push('storage_full');
  }
  codes.push('rate_limit', 'query_too_large', 'store_unavailable', 'internal_error');
  return codes;
}

export interface OpenApiOptions {
  /** `info.version`: the service version. */
  version: string;
  /** PUBLIC_URL; the server is relative (`/`) without it. */
  publicUrl?: string | undefined;
}

/** Koa's `/a/:id/*rest` as OpenAPI's `/a/{id}/{rest}`, with the parameter names in order. */
export function openApiPath(koaPath: string): { path: string; params: string[] } {
  const params: string[] = [];
  const path = koaPath
    .replace(/[{}]/g, '') // path-to-regexp optional groups: documented in their full form
    .replace(/[:*]([A-Za-z_$][\w$]*)/g, (_match, name: string) => {
      params.push(name);
      return `{${name}}`;
    });
  return { path, params };
}

/** `getV1ComputeByJobId`: the method, then each path segment, parameters as `By<Name>`. */
export function defaultOperationId(method: string, koaPath: string): string {
  const words = koaPath
    .split('/')
    .filter(Boolean)
    .flatMap((segment) => {
      const param = /^[:*](.+)$/.exec(segment);
      const parts = (param ? param[1]! : segment).split(/[^A-Za-z0-9]+/).filter(Boolean);
      const capitalized = parts.map((p) => p[0]!.toUpperCase() + p.slice(1));
      return param ? ['By', ...capitalized] : capitalized;
    });
  return method.toLowerCase() + words.join('');
}

/** The routes that lack docs: the reference would show only their method and path. */
export const undocumentedRoutes = (routes: readonly RouteSpec<unknown>[]): string[] =>
  routes.filter((r) => r.docs === undefined).map((r) => `${r.method} ${r.path}`);

const pascal = (id: string) => id[0]!.toUpperCase() + id.slice(1);
const isJsonMedia = (type: string) => type === 'application/json' || type.endsWith('+json');

export function buildOpenApiDocument(routes: readonly RouteSpec<unknown>[], options: OpenApiOptions): Json {
  const names = new Map<ZodType, string>(NAMED_SCHEMAS.map(([schema, name]) => [schema, name]));
  const inputs = new Map<ZodType, string>();
  const outputs = new Map<ZodType, string>();
  // Request bodies name their schema before the components are known; a clashing name is renamed after.
  const bodyRefs: { target: { $ref: string }; name: string }[] = [];
  const bodyRef = (name: string) => {
    const target = ref(name);
    bodyRefs.push({ target, name });
    return target;
  };
  const nameOf = (schema: ZodType, fallback: string, into: Map<ZodType, string>): string => {
    const name = into.get(schema) ?? names.get(schema) ?? fallback;
    into.set(schema, name);
    return name;
  };

  const paths: Record<string, Record<string, Json>> = {};
  const operationIds = new Set<string>();
  for (const spec of routes) {
    const { path, params } = openApiPath(spec.path);
    const docs: RouteDocs = spec.docs ?? { summary: `${spec.method} ${spec.path}`, tags: [], responses: {} };
    let operationId = docs.operationId ?? defaultOperationId(spec.method, spec.path);
    while (operationIds.has(operationId)) operationId += '_'; // two undocumented twins must still be distinct
    operationIds.add(operationId);
    const id = pascal(operationId);

    const operation: Json = {
      operationId,
      summary: docs.summary,
      ...(docs.description === undefined ? {} : { description: docs.description }),
      tags: [...docs.tags],
      parameters: [
        ...parameters(docs.params, 'path', params),
        ...parameters(docs.query, 'query', []),
        ...SHARED_HEADERS.map((h) => ({ $ref: `#/components/parameters/${h.key}` })),
      ],
      ...(docs.body === undefined
        ? {}
        : {
            requestBody: {
              required: true,
              content: { 'application/json': { schema: bodyRef(nameOf(docs.body, `${id}Request`, inputs)) } },
            },
          }),
      responses: responses(spec, docs, (schema, status) =>
        ref(nameOf(schema, `${id}Response${status === 200 ? '' : status}`, outputs)),
      ),
      security: security(docs.security ?? defaultSecurity(spec)),
      ...(spec.docs === undefined ? { 'x-undocumented': true } : {}),
    };
    (paths[path] ??= {})[spec.method.toLowerCase()] = operation;
  }
  const { schemas, rename } = components(inputs, outputs, names);
  for (const body of bodyRefs) body.target.$ref = ref(rename(body.name)).$ref;

  return {
    openapi: '3.1.0',
    jsonSchemaDialect: SCHEMA_DIALECT,
    info: {
      title: 'Geofabric gateway API',
      version: options.version,
      summary: 'Geospatial compute, proof and compliance: signed jobs in H3 cells, Merkle-sealed proofs',
      description:
        'Every error body is `{ "error": code, "detail"?: text }`, except on the OpenAI-compatible routes (`/v1/chat/completions`, `/v1/models`), which answer OpenAI\'s `{ "error": { message, type, param, code } }`. Routes marked `signed` need an Ed25519 signature ' +
        'over the RFC 8785 canonical JSON of the body without its `signature` field, in the body and in ' +
        '`X-Idn-Signature`; `api_key` routes need `Authorization: Bearer <key>`. Every route passes the four gates ' +
        '(signature, jurisdiction, delegation, pre-flight) in that order.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: options.publicUrl ?? '/' }],
    tags: TAGS.filter((t) =>
      Object.values(paths).some((item) => Object.values(item).some((op) => usesTag(op, t.name))),
    ),
    paths,
    components: {
      schemas,
      responses: {
        Error: {
          description: 'Any other error: the code says which (see the error table, docs/protocol.md §7)',
          content: { 'application/json': { schema: { $ref: ERROR_REF } } },
        },
      },
      parameters: Object.fromEntries(
        SHARED_HEADERS.map((h) => [
          h.key,
          { name: h.name, in: 'header', required: false, description: h.description, schema: { type: 'string' } },
        ]),
      ),
      securitySchemes: {
        signature: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Idn-Signature',
          description:
            'Ed25519 signature (128 lowercase hex) by `requester_pk` over the UTF-8 of the RFC 8785 (JCS) canonical ' +
            'JSON of the body without `signature`; the same value goes in the body field `signature` (docs/protocol.md §5.2).',
        },
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          description: 'An API key (`geofabric apikey create`, or API_KEYS): `Authorization: Bearer <key>`.',
        },
        openEoBearer: {
          type: 'http',
          scheme: 'bearer',
          description: "openEO's form of an API key: `Authorization: Bearer basic//<key>` (docs/protocol.md §16.2).",
        },
        openEoBasic: {
          type: 'http',
          scheme: 'basic',
          description: 'HTTP Basic with an API key as the password; the user name is not checked.',
        },
      },
    },
  };
}

const usesTag = (operation: Json, tag: string) => (operation.tags as string[]).includes(tag);
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

const defaultSecurity = (spec: RouteSpec<unknown>) =>
  spec.auth === 'signed' ? 'signed' : spec.auth === 'api_key' ? 'api_key' : spec.auth === 'openeo' ? 'openeo' : 'none';

function security(kind: NonNullable<RouteDocs['security']>): Json[] {
  if (kind === 'signed') return [{ signature: [] }];
  if (kind === 'api_key') return [{ apiKey: [] }];
  if (kind === 'openeo') return [{ openEoBearer: [] }];
  if (kind === 'openeo_basic') return [{ openEoBasic: [] }];
  return [];
}

/** One parameter per property of an object schema; path parameters without docs are plain strings. */
function parameters(schema: ZodType | undefined, where: 'path' | 'query', pathNames: readonly string[]): Json[] {
  const json = schema === undefined ? {} : standalone(schema, 'input');
  const properties = (json.properties ?? {}) as Record<string, Json>;
  const required = new Set((json.required ?? []) as string[]);
  const names = where === 'path' ? pathNames : Object.keys(properties);
  return names.map((name) => {
    const { description, ...rest } = properties[name] ?? { type: 'string' };
    return {
      name,
      in: where,
      required: where === 'path' || required.has(name),
      ...(typeof description === 'string' ? { description } : {}),
      schema: rest,
    };
  });
}

/** A schema on its own (parameters): no `$schema`, every part inline. */
function standalone(schema: ZodType, io: 'input' | 'output'): Json {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'any',
  }) as Json;
  return json;
}

function responses(
  spec: RouteSpec<unknown>,
  docs: RouteDocs,
  schemaRef: (schema: ZodType, status: number) => Json,
): Json {
  const out: Record<string, Json> = {};
  const documented = Object.entries(docs.responses)
    .map(([status, response]) => [Number(status), response] as const)
    .sort((a, b) => a[0] - b[0]);
  for (const [status, response] of documented) out[String(status)] = describedResponse(response, status, schemaRef);
  if (documented.length === 0) out['200'] = { description: 'Success' };

  const codes = new Map<number, ErrorCode[]>();
  const order = Object.keys(ERROR_STATUS) as ErrorCode[];
  const all = [...new Set([...gateErrors(spec), ...(docs.errors ?? [])])].sort(
    (a, b) => ERROR_STATUS[a] - ERROR_STATUS[b] || order.indexOf(a) - order.indexOf(b),
  );
  const openai = spec.errorStyle === 'openai';
  const openeo = spec.errorStyle === 'openeo';
  for (const code of all) {
    // OpenAI-style routes answer some conditions with OpenAI's status and code (an unknown model is 404), and
    // openEO routes with openEO's (core/openeo/errors.ts).
    const status = openai
      ? openAiError({ code, status: ERROR_STATUS[code] }).status
      : openeo
        ? openEoError(new ServiceError(code), '').status
        : ERROR_STATUS[code];
    const listed = openeo ? openEoError(new ServiceError(code), '').body.code : code;
    const list = codes.get(status) ?? [];
    if (!list.includes(listed as ErrorCode)) codes.set(status, [...list, listed as ErrorCode]);
  }
  for (const code of openeo ? (docs.openEoErrors ?? []) : []) {
    const status = (OPENEO_ERROR_STATUS as Record<string, number>)[code] ?? 400;
    codes.set(status, [...(codes.get(status) ?? []), code as ErrorCode]);
  }
  for (const [status, list] of codes) {
    const key = String(status);
    const retry = status === 429 || status === 503 ? retryAfter : {};
    const given = out[key];
    if (given) {
      // The route documents this status itself (a body with more fields): its codes are listed beside it.
      out[key] = { ...given, 'x-error-codes': list };
      continue;
    }
    const schema = openeo
      ? { $ref: OPENEO_ERROR_REF, properties: { code: { enum: list } } }
      : openai
        ? {
            $ref: OPENAI_ERROR_REF,
            properties: {
              error: {
                properties: { code: { enum: list.map((code) => openAiError({ code, status }).body.error.code) } },
              },
            },
          }
        : { $ref: ERROR_REF, properties: { error: { enum: list } } };
    out[key] = {
      description: list.join(', '),
      ...retry,
      content: { 'application/json': { schema } },
      'x-error-codes': list,
    };
  }
  const sorted = Object.fromEntries(Object.entries(out).sort((a, b) => Number(a[0]) - Number(b[0])));
  return { ...sorted, default: { $ref: '#/components/responses/Error' } };
}

const retryAfter = {
  headers: { 'Retry-After': { description: 'Seconds to wait before retrying', schema: { type: 'integer' } } },
};

function describedResponse(
  response: ResponseDocs,
  status: number,
  schemaRef: (schema: ZodType, status: number) => Json,
): Json {
  const types = response.contentTypes ?? ['application/json'];
  const content = Object.fromEntries(
    types.map((type) => {
      if (isJsonMedia(type)) {
        return [type, { schema: response.schema ? schemaRef(response.schema, status) : { type: 'object' } }];
      }
      // Binary bodies (images) carry no schema in OpenAPI 3.1; text ones (event streams) are strings.
      return [type, type.startsWith('text/') ? { schema: { type: 'string' } } : {}];
    }),
  );
  const headers = Object.entries(response.headers ?? {});
  return {
    description: response.description,
    ...(headers.length === 0
      ? {}
      : {
          headers: Object.fromEntries(
            headers.map(([name, description]) => [name, { description, schema: { type: 'string' } }]),
          ),
        }),
    ...(types.length === 0 ? {} : { content }),
  };
}

/**
 * The named schemas, converted as registries so a schema nested in another named one becomes a `$ref`.
 * Requests are zod's input, answers its output; a name used both ways with different JSON gets an `Input`
 * twin. Only what the operations reach is kept.
 */
function components(
  inputs: Map<ZodType, string>,
  outputs: Map<ZodType, string>,
  names: Map<ZodType, string>,
): { schemas: Json; rename: (name: string) => string } {
  const convert = (used: Map<ZodType, string>, io: 'input' | 'output', rename: (name: string) => string) => {
    const registry = z.registry<{ id: string }>();
    const all = new Map<ZodType, string>([...names, ...used]);
    for (const [schema, name] of all) registry.add(schema, { id: rename(name) });
    const { schemas } = z.toJSONSchema(registry, {
      target: 'draft-2020-12',
      io,
      unrepresentable: 'any',
      uri: (name) => `#/components/schemas/${name}`,
    });
    return Object.fromEntries(
      Object.entries(schemas).map(([name, schema]) => {
        const { $schema: _dialect, $id: _id, ...json } = schema as Json;
        return [name, json];
      }),
    );
  };
  const output = convert(outputs, 'output', (name) => name);
  const firstInput = convert(inputs, 'input', (name) => name);
  // Error is referenced by every error response, not by a route's own schemas.
  const fromOutputs = reach([...outputs.values(), 'Error', 'OpenAiError', 'OpenEoError'], output);
  const clash = new Set(
    [...reach([...inputs.values()], firstInput)].filter(
      (name) => fromOutputs.has(name) && JSON.stringify(output[name]) !== JSON.stringify(firstInput[name]),
    ),
  );
  const rename = (name: string) => (clash.has(name) ? `${name}Input` : name);
  const input = clash.size === 0 ? firstInput : convert(inputs, 'input', rename);
  const fromInputs = reach([...inputs.values()].map(rename), input);
  // A name both ways is the same JSON (else it was renamed): answers' version, then the requests' own.
  const merged: Record<string, Json> = {};
  for (const name of fromOutputs) merged[name] = output[name] as Json;
  for (const name of fromInputs) merged[name] ??= input[name] as Json;
  return {
    schemas: Object.fromEntries(Object.entries(merged).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
    rename,
  };
}

/** Names reachable from `roots` through `#/components/schemas/` references. */
function reach(roots: readonly string[], schemas: Record<string, unknown>): Set<string> {
  const seen = new Set<string>();
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (typeof value !== 'object' || value === null) return;
    for (const [key, inner] of Object.entries(value)) {
      if (key === '$ref' && typeof inner === 'string' && inner.startsWith('#/components/schemas/')) {
        enter(inner.slice('#/components/schemas/'.length));
      } else visit(inner);
    }
  };
  const enter = (name: string) => {
    if (seen.has(name) || schemas[name] === undefined) return;
    seen.add(name);
    visit(schemas[name]);
  };
  roots.forEach(enter);
  return seen;
}
