import type { Context } from 'koa';
import type { Check } from '../core/check.js';
import type { Authority } from '../core/gates/delegation.js';
import type { JurisdictionContext } from '../core/gates/jurisdiction.js';
import type { RequestParts } from '../core/gates/request-scope.js';
import type { Requester } from '../core/gates/signature.js';
import type { ApiKeyRecord } from '../store/api-key-store.js';

/**
 * How a route authenticates its caller. `signed`: Ed25519 over the canonical body (gate 1);
 * `api_key`: `Authorization: Bearer` with a configured key (API_KEYS) or a live key of the API key store
 * (OpenAI-compatible routes); `public`: anyone.
 */
export type AuthPolicy = 'signed' | 'api_key' | 'public';

/** What the gates established, available to the handler. */
export interface GateState {
  requester: Requester | undefined;
  place: JurisdictionContext | null;
  authority: Authority;
  /** The caller's API key on `api_key` routes (an env key appears as tier `pro`, id `env:<index>`). */
  apiKey?: ApiKeyRecord;
}

export interface RouteSpec<Input> {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  auth: AuthPolicy;
  /**
   * Browser-readable from any origin: `Access-Control-Allow-Origin: *` and these response headers exposed,
   * set before the gates so a gate's rejection is readable too. For public, unauthenticated routes only.
   */
  cors?: { expose: readonly string[] };
  /** Read a JSON body before the gates run. */
  jsonBody?: boolean;
  /** Gate 2's job cell when the request names none (omit for routes that are not about a place). */
  defaultCell?: string;
  /** Delegation facets the route exercises; default: the step types named in the body. */
  facets?: readonly string[];
  /**
   * Gate 4, the route's pre-flight: schema, plan and geometry checks on the raw request. Runs after the
   * generic GeoJSON check of the body. Its value is the handler's typed input.
   */
  preflight: (parts: RequestParts) => Check<Input>;
  handler: (ctx: Context, input: Input, gates: GateState) => Promise<void>;
}

/** Erases the input type so routes of different inputs live in one list. */
export const route = <Input>(spec: RouteSpec<Input>): RouteSpec<unknown> => spec as RouteSpec<unknown>;
