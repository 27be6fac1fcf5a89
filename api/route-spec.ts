import type { Context } from 'koa';
import type { ZodType } from 'zod';
import type { Check } from '../core/check.js';
import type { ErrorCode } from '../core/errors.js';
import type { Authority } from '../core/gates/delegation.js';
import type { JurisdictionContext } from '../core/gates/jurisdiction.js';
import type { RequestParts } from '../core/gates/request-scope.js';
import type { Requester } from '../core/gates/signature.js';
import type { ApiKeyRecord } from '../store/api-key-store.js';

/**
 * How a route authenticates its caller. `signed`: Ed25519 over the canonical body (gate 1);
 * `api_key`: `Authorization: Bearer` with a configured key (API_KEYS) or a live key of the API key store
 * (OpenAI-compatible routes); `openeo`: the same keys as openEO clients send them (`Authorization: Bearer
 * basic//<key>`, and HTTP Basic with the key as password on `GET /credentials/basic`; api/openeo/credentials.ts);
 * `public`: anyone.
 */
export type AuthPolicy = 'signed' | 'api_key' | 'openeo' | 'public';

/** What the gates established, available to the handler. */
export interface GateState {
  requester: Requester | undefined;
  place: JurisdictionContext | null;
  authority: Authority;
  /** The caller's API key on `api_key` routes (an env key appears as tier `pro`, id `env:<index>`). */
  apiKey?: ApiKeyRecord;
}

/** One documented answer of a route: JSON described by `schema` unless `contentTypes` says otherwise. */
export interface ResponseDocs {
  description: string;
  /** The JSON body (zod's output type); absent: a body not described further, or none. */
  schema?: ZodType;
  /** Media types of the body; default `application/json`. Non-JSON types are documented as strings. */
  contentTypes?: readonly string[];
  /** Response headers worth knowing: name → meaning. */
  headers?: Readonly<Record<string, string>>;
}

/**
 * The route's API reference: `/openapi.json` is generated from these and the route's own
 * method, path and auth. The schemas are the ones the pre-flight parses with, so the reference cannot drift
 * from what the gateway accepts. Every route must have docs (test/api/openapi.test.ts).
 */
export interface RouteDocs {
  summary: string;
  description?: string;
  /** Groups in the reference; each must be one of api/openapi-document.ts TAGS. */
  tags: readonly string[];
  /** Default: derived from method and path (`getV1ComputeByJobId`). */
  operationId?: string;
  /** The JSON request body (zod's input type). */
  body?: ZodType;
  /** Query parameters: an object schema, one parameter per property. */
  query?: ZodType;
  /** Path parameters (`:name` in the path): an object schema, one property per parameter. */
  params?: ZodType;
  /** Successful (and other non-error) answers by status. */
  responses: Readonly<Record<number, ResponseDocs>>;
  /**
   * Error codes the route itself can answer (core/errors.ts); the gates' codes (auth, jurisdiction, delegation,
   * body parsing) are added from `auth` and `jsonBody`.
   */
  errors?: readonly ErrorCode[];
  /** openEO routes: the openEO error codes (core/openeo/errors.ts) the route itself can answer. */
  openEoErrors?: readonly string[];
  /**
   * Default: from `auth` (`signed` → X-Idn-Signature, `api_key` → bearer, `openeo` → openEO's bearer, `public`
   * → none); `openeo_basic` is HTTP Basic (`GET /credentials/basic`).
   */
  security?: 'signed' | 'api_key' | 'openeo' | 'openeo_basic' | 'none';
}

export interface RouteSpec<Input> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  auth: AuthPolicy;
  /**
   * Browser-readable from any origin: `Access-Control-Allow-Origin: *` and these response headers exposed,
   * set before the gates so a gate's rejection is readable too. For public, unauthenticated routes only.
   */
  cors?: { expose: readonly string[] };
  /** Read a JSON body before the gates run. */
  jsonBody?: boolean;
  /** This route's JSON body bound instead of the gateway's (BODY_LIMIT_BYTES): blob uploads carry a few MB. */
  bodyLimitBytes?: number;
  /**
   * How errors on this path are written, the gates' included (api/http-errors.ts): `openai` for the
   * OpenAI-compatible routes, whose clients read OpenAI's error shape; `openeo` for the openEO routes
   * (core/openeo/errors.ts). Default `svc`.
   */
  errorStyle?: 'svc' | 'openai' | 'openeo';
  /** Gate 2's job cell when the request names none (omit for routes that are not about a place). */
  defaultCell?: string;
  /**
   * Cells the request names in a form of its own (an openEO process graph's extents), read from the raw request
   * for gates 2 and 3 like the cells of docs/protocol.md §1.7; a malformed request names none here and is refused
   * by the pre-flight. The first is the job cell when the request names no other.
   */
  cells?: (parts: RequestParts) => string[];
  /** Delegation facets the route exercises; default: the step types named in the body. */
  facets?: readonly string[];
  /**
   * Gate 4, the route's pre-flight: schema, plan and geometry checks on the raw request. Runs after the
   * generic GeoJSON check of the body. Its value is the handler's typed input.
   */
  preflight: (parts: RequestParts) => Check<Input>;
  handler: (ctx: Context, input: Input, gates: GateState) => Promise<void>;
  /** The API reference of the route (`/openapi.json`). */
  docs?: RouteDocs;
}

/** Erases the input type so routes of different inputs live in one list. */
export const route = <Input>(spec: RouteSpec<Input>): RouteSpec<unknown> => spec as RouteSpec<unknown>;
