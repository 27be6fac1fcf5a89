import { timingSafeEqual } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Check, Failure } from '../core/check.js';
import { ServiceError } from '../core/errors.js';
import { checkDelegation, checkRateLimit, rateWindow } from '../core/gates/delegation.js';
import type { DelegationGrant } from '../core/delegation-cert.js';
import { checkJurisdiction } from '../core/gates/jurisdiction.js';
import { requestScope, type RequestParts } from '../core/gates/request-scope.js';
import { checkRequestSignatureAsync, type Requester } from '../core/gates/signature.js';
import { checkPayloadGeometry } from '../core/geometry.js';
import { BoundedSet } from '../core/bounded-set.js';
import type { RateLimiter } from '../core/rate-limiter.js';
import type { ApiKeyRecord } from '../store/api-key-store.js';
import type { AppDeps } from './app-deps.js';
import { enforcePrincipalRate, type RateHeaderTarget } from './rate-limit.js';
import { sharedRequestVerifier } from './request-verifier.js';
import { toolPolicyGate } from './tool-policy-gate.js';
import { checkOpenEoCredentials } from './openeo/credentials.js';
import type { GateState, RouteSpec } from './route-spec.js';

/**
 * The four router gates of docs/protocol.md §1.7, in order, as one middleware chain that `registerRoute` puts in
 * front of every route: a new route cannot opt out. Each gate is a pure check in core/gates; this file
 * only adapts them to Koa and throws the failure as the JSON error.
 */
export function gateChain(deps: AppDeps, spec: RouteSpec<unknown>, limits: GateLimits = gateLimits()): Middleware[] {
  const chain = routeGates(deps, spec, limits);
  // One middleware, not four: each Koa layer costs a promise hop on every request, and the gates await only
  // when they must (a stored API key, a rate-limit count).
  return [
    async (ctx, next) => {
      for (const [name, gate] of chain) {
        try {
          const pending = gate(ctx);
          if (pending) await pending;
        } catch (error) {
          // Noted for the request's metrics and log line (api/request-context.ts); a store failure is no refusal.
          if (error instanceof ServiceError) {
            const rejection: GateRejection = { gate: name, code: error.code };
            ctx.state.gateRejection = rejection;
          }
          throw error;
        }
      }
      await next();
    },
  ];
}

/** The gates of one route, in order, each named for the refusals it makes. */
export function routeGates(deps: AppDeps, spec: RouteSpec<unknown>, limits: GateLimits): [GateName, Gate][] {
  return [
    [
      spec.auth === 'api_key' || spec.auth === 'openeo' ? 'api_key' : 'signature',
      authGate(deps, spec, limits.principal),
    ],
    ['jurisdiction', jurisdictionGate(spec)],
    ['delegation', delegationGate(deps, spec, limits.countedOps)],
    ['geometry', geometryGate],
    ['preflight', preflightGate(spec)],
    ['tool_policy', toolPolicyGate(deps.config.toolPolicy)],
  ];
}

/**
 * Runs a public route's gates on a request without a body, when they can all answer at once: true when every
 * gate passed (the request's state then holds `gates` and `input`), false when one refused or would wait. Gates
 * of a public route write nothing shared for an anonymous request, so a request they did not pass here can go
 * through Koa's chain afresh, which then refuses it with its error (the tile-hit path, api/tile-hits.ts).
 */
export function passGatesAtOnce(chain: readonly [GateName, Gate][], ctx: GateContext): boolean {
  try {
    for (const [, gate] of chain) if (gate(ctx) !== undefined) return false;
    return true;
  } catch {
    return false;
  }
}

/**
 * What the gates read and write of a request: Koa's Context has all of it, and so does the tile-hit path's
 * light request (api/tile-hits.ts). Only a signed or API-key route's gate sets headers (its rate limit).
 */
export interface GateContext extends RateHeaderTarget {
  state: Record<string, unknown>;
  params?: Record<string, string>;
  query: Record<string, string | string[] | undefined>;
  get(field: string): string;
}

/** What the gates count across requests; one per app. */
export interface GateLimits {
  /** Requests per principal (api/rate-limit.ts); undefined: no limit. */
  principal?: RateLimiter | undefined;
  /**
   * Signed requests this process saw counted against their agent's `max_ops_per_hour`: a cache of the store's
   * counted-op marks (delegationGate), so a replay here skips reading the store. Bounded: past it an old replay
   * reads the store again.
   */
  countedOps: BoundedSet;
}

export const gateLimits = (principal?: RateLimiter): GateLimits => ({
  principal,
  countedOps: new BoundedSet(100_000),
});

/**
 * The gates by name, 1 to 4; gate 1 is named after the route's auth policy. Gate 4 is two checks, named apart
 * so a refusal is attributed to what made it: `geometry` (GeoJSON anywhere in the body) and `preflight` (the
 * route's own checks: its schema, model, plan).
 */
export type GateName =
  'signature' | 'api_key' | 'jurisdiction' | 'delegation' | 'geometry' | 'preflight' | 'tool_policy';

/** Which gate refused a request, and with which error code (`ctx.state.gateRejection`). */
export interface GateRejection {
  gate: GateName;
  code: string;
}

/** One gate: throws its refusal as a ServiceError; a promise only when it has I/O to wait for. */
export type Gate = (ctx: GateContext) => void | Promise<void>;

const unwrap = <T>(check: Check<T>, headers: Record<string, string> = {}): T => {
  if (!check.ok) throw refusal(check, headers);
  return check.value;
};

/**
 * A gate's refusal as the JSON error, built without a stack trace: a refusal is an answer, not a fault (it is
 * never logged with a stack), and capturing the stack of the async middleware chain cost more than most gates.
 */
function refusal(check: Failure, headers: Record<string, string>): ServiceError {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new ServiceError(check.error, check.detail, headers, check.param);
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** The request's parts as the pure checks read them; `header` a method, not a closure made per request. */
class ContextParts implements RequestParts {
  readonly body: unknown;
  readonly params: Record<string, string | undefined>;
  readonly query: Record<string, string | string[] | undefined>;
  constructor(private readonly ctx: GateContext) {
    this.body = ctx.state.body;
    this.params = (ctx.params ?? {}) as Record<string, string | undefined>;
    this.query = ctx.query;
  }

  header(name: string): string | undefined {
    return this.ctx.get(name) || undefined;
  }
}

const parts = (ctx: GateContext): RequestParts => new ContextParts(ctx);

const gates = (ctx: GateContext): GateState => ctx.state.gates as GateState;

/**
 * Gate 1 (or the route's other auth policy), then the principal's request rate: counted only once the
 * signature or key checked out, so nobody can spend another's budget with forged requests.
 */
function authGate(deps: AppDeps, spec: RouteSpec<unknown>, principalRate: RateLimiter | undefined): Gate {
  const verify = sharedRequestVerifier(deps.config.verifyThreads);
  return (ctx) => {
    const state: GateState = { requester: undefined, place: null, authority: { kind: 'anonymous' } };
    ctx.state.gates = state;
    if (spec.auth === 'signed') {
      const now = deps.clock();
      // The Ed25519 check runs on a worker thread: the event loop serves other requests meanwhile.
      const checked = checkRequestSignatureAsync(ctx.state.body, ctx.get('x-idn-signature') || undefined, now, verify);
      if ('then' in checked) return checked.then((done) => admitSigned(ctx, state, done, principalRate, now));
      admitSigned(ctx, state, checked, principalRate, now);
    } else if (spec.auth === 'api_key' || spec.auth === 'openeo') {
      const header = ctx.get('authorization');
      const checked =
        spec.auth === 'api_key'
          ? checkApiKey(header, deps)
          : checkOpenEoCredentials(header, (token) => findApiKey(token, deps));
      return checked.then((key) => {
        state.apiKey = key;
        enforcePrincipalRate(ctx, principalRate, `key:${key.id}`, deps.clock());
      });
    }
  };
}

/** Gate 1's outcome: the verified requester, then its request rate (a function, not a closure per request). */
function admitSigned(
  ctx: GateContext,
  state: GateState,
  checked: Check<Requester>,
  principalRate: RateLimiter | undefined,
  now: number,
): void {
  state.requester = unwrap(checked);
  enforcePrincipalRate(ctx, principalRate, `pk:${state.requester.pk}`, now);
}

/** Configured keys (API_KEYS) predate the store: operator keys, so unlimited (`pro`), named by position. */
const envKeyRecord = (index: number): ApiKeyRecord => ({
  id: `env:${index}`,
  name: `API_KEYS[${index}]`,
  tier: 'pro',
  created_at: new Date(0).toISOString(),
  revoked_at: null,
});

/**
 * The `api_key` policy (docs/protocol.md §5.3): `Authorization: Bearer <key>` naming a configured key (compared in constant
 * time) or a live key of the API key store (verified by its hash). Anything else, including a revoked key,
 * is 401 `unauthorized`, with one detail for every case, so a caller learns nothing about which keys exist.
 */
async function checkApiKey(authorization: string, deps: AppDeps): Promise<ApiKeyRecord> {
  const token = /^Bearer\s+(\S+)$/i.exec(authorization)?.[1];
  const key = token === undefined ? null : await findApiKey(token, deps);
  if (key) return key;
  throw new ServiceError('unauthorized', 'a valid API key is required: Authorization: Bearer <key>');
}

/** The record of a configured key (compared in constant time) or of a live stored key; null for anything else. */
export async function findApiKey(
  token: string,
  deps: Pick<AppDeps, 'config' | 'apiKeyStore'>,
): Promise<ApiKeyRecord | null> {
  const env = envKeyOf(token, deps.config.apiKeys);
  return env ?? deps.apiKeyStore.verify(token);
}

/**
 * findApiKey without a promise where none is needed: a configured key, or a stored key from a store that can
 * answer at once (SQLite: `verifyNow`); a promise only from a store that must wait (MongoDB). The chat lane's.
 */
export function findApiKeyNow(
  token: string,
  deps: Pick<AppDeps, 'config' | 'apiKeyStore'>,
): ApiKeyRecord | null | Promise<ApiKeyRecord | null> {
  const env = envKeyOf(token, deps.config.apiKeys);
  if (env !== null) return env;
  return deps.apiKeyStore.verifyNow ? deps.apiKeyStore.verifyNow(token) : deps.apiKeyStore.verify(token);
}

function envKeyOf(token: string, apiKeys: readonly string[]): ApiKeyRecord | null {
  const given = Buffer.from(token);
  let envIndex = -1;
  // Every configured key is compared, so the time taken does not tell which one (if any) matched.
  apiKeys.forEach((key, index) => {
    const candidate = Buffer.from(key);
    if (candidate.length === given.length && timingSafeEqual(candidate, given) && envIndex < 0) envIndex = index;
  });
  return envIndex >= 0 ? envKeyRecord(envIndex) : null;
}

/** Gate 2: every named cell is valid; the job cell resolves to country and frameworks. */
function jurisdictionGate(spec: RouteSpec<unknown>): Gate {
  return (ctx) => {
    const scope = requestScope(parts(ctx));
    if (spec.cells) {
      for (const cell of spec.cells(parts(ctx))) scope.cells.push({ where: 'the process graph extent', value: cell });
      scope.requestedCell ??= scope.cells[0];
    }
    ctx.state.scope = scope;
    gates(ctx).place = unwrap(
      checkJurisdiction(
        scope,
        { jurisdiction: ctx.get('x-svc-jurisdiction') || undefined, minTier: ctx.get('x-svc-min-tier') || undefined },
        spec.defaultCell,
      ),
    );
  };
}

/**
 * Gate 3: the delegation chain traces the requester to a human; its hourly op budget is enforced. Only a signed
 * request spends it (its requester is then the chain's agent): a certificate is public, so an unsigned request
 * carrying somebody's certificate is checked against it but spends nothing, or anyone could exhaust an agent.
 */
function delegationGate(deps: AppDeps, spec: RouteSpec<unknown>, countedOps: BoundedSet): Gate {
  return (ctx) => {
    const state = gates(ctx);
    const scope = ctx.state.scope as ReturnType<typeof requestScope>;
    const now = deps.clock();
    state.authority = unwrap(
      checkDelegation({
        header: ctx.get('x-svc-delegation-cert') || undefined,
        requesterPk: state.requester?.pk,
        requireDelegation: deps.config.requireDelegation,
        nowMs: now,
        jobCell: state.place?.jobCell,
        cells: scope.cells.map(({ value }) => value as string),
        trustedPrincipals: deps.config.trustedPrincipals,
        facets: [...(spec.facets ?? scope.stepTypes)],
        tools: scope.tools,
      }),
    );
    const authority = state.authority;
    if (authority.kind === 'delegated' && authority.grant.max_ops_per_hour !== null && state.requester) {
      // Keyed on the signature gate 1 verified (trimmed, lower case), not the raw header: re-casing a captured
      // request's header must not make it a new operation.
      const op = countedOp(authority.grant, state.requester.signature);
      if (countedOps.has(op.cacheKey)) return;
      return spendOnce(deps, op, authority.grant.max_ops_per_hour, now).then(() => {
        countedOps.add(op.cacheKey);
      });
    }
  };
}

/**
 * One signed request as an operation of its agent: its mark in the store, kept over the certificate's lifetime
 * (the "window" of the mark is [not_before, not_after], which the store keeps one more lifetime), so its replays,
 * in any process and any hour, find it counted (docs/security.md §3). The window starts at not_before, never in
 * the future (gate 3 just held the certificate valid), as the store's pruning of expired windows needs.
 */
function countedOp(grant: DelegationGrant, signature: string) {
  const start = Date.parse(grant.not_before);
  const windowMs = Math.max(1, Date.parse(grant.not_after) - start);
  const key = `op:${grant.agent_pk}:${signature}`;
  return { agentPk: grant.agent_pk, key, start, windowMs, cacheKey: `${start}:${key}` };
}

/**
 * Counts a signed request against its agent's hourly `max_ops_per_hour` unless the store marks it counted
 * already; marks it once admitted. A refused request is not marked, so it counts when it is sent again. Two
 * first sends racing may both count (errs towards the limit); nothing lets a request run uncounted.
 */
async function spendOnce(deps: AppDeps, op: ReturnType<typeof countedOp>, maxPerHour: number, now: number) {
  if ((await deps.rateLimits.peek(op.key, op.start)) > 0) return;
  const window = rateWindow(now, deps.config.epochGenesisMs);
  const count = await deps.rateLimits.increment(`agent:${op.agentPk}`, window.start, window.end - window.start);
  const limited = checkRateLimit(count, maxPerHour, window.end, now);
  unwrap(limited, { 'retry-after': String(Math.max(1, Math.ceil((window.end - now) / 1000))) });
  await deps.rateLimits.increment(op.key, op.start, op.windowMs);
}

/** Gate 4, first half: geometry pre-flight (GeoJSON anywhere in the body). */
const geometryGate: Gate = (ctx) => {
  if (ctx.state.body !== undefined) unwrap(checkPayloadGeometry(ctx.state.body));
};

/** Gate 4, second half: the route's own pre-flight (schema, model, plan checks); its value is the input. */
function preflightGate(spec: RouteSpec<unknown>): Gate {
  return (ctx) => {
    ctx.state.input = unwrap(spec.preflight(parts(ctx)));
  };
}
