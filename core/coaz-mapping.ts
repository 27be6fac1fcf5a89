/**
 * Authorization mappings (docs/protocol.md §2.9): a tool may declare `coaz: true` and an `x-coaz-mapping`
 * whose CEL expressions map a call to an authorization request (subject, action, resource, context). The
 * mapped request is then checked against the delegation certificate before the tool runs.
 *
 * CEL variables: `params` (the call's validated arguments), `claims` (the bearer token's idn_* claims, or null
 * without a token), `tool` (the tool name) and `context` (CoazContext: what the executing server attests about
 * itself and the call's cell). Types follow CEL's JSON mapping: params' numbers are doubles, as JSON numbers
 * are; the integer fields we define (context.audit.epoch_index, claims.idn_epoch) are CEL ints.
 *
 * Contracts:
 * - subject, action and resource must evaluate to non-empty strings; context entries to JSON values (a
 *   timestamp becomes ISO 8601 text, ints become numbers). A mapping's context entries extend the base context
 *   and may not replace its four keys: the server attests those, a mapping cannot rewrite them.
 * - A parse, type or evaluation error is `coaz_error` naming the expression (`subject`, `context.regulation`
 *   …) and CEL's message. Compiled expressions are cached (bounded); expressions come from tool definitions,
 *   not from callers, so the cache does not grow with attacker input beyond its bound anyway.
 * - checkCoazRequest decides the mapped request against the certificate: active now, subject = the acting
 *   agent (the token's agent when the call runs on behalf of one, else the certificate's agent: a mapping
 *   cannot launder a token call into the server's identity), action = an allowed and not denied tool (the
 *   rules of core/tool-preflight.ts), resource = an H3 cell inside the certificate's cells and, on behalf of
 *   a token, inside the token's cells too. A refusal is `coaz_denied` with the docs/protocol.md §2.8 violation it is.
 */
import { Environment, type ParseResult } from '@marcbachmann/cel-js';
import { z } from 'zod';
import type { Severity, ViolationType } from './breadcrumb-types.js';
import { fail, pass, type Check, type Failure } from './check.js';
import type { DelegationCertificate } from './delegation-cert.js';
import { cellCoveredBy, isCell } from './h3-cell.js';
import type { IdnTokenClaims } from './idn-token-claims.js';
import { toolRefusal, type ChainRights } from './tool-preflight.js';

export interface CoazMapping {
  /** CEL expression, evaluating to the acting agent's public key. */
  subject: string;
  /** CEL expression, evaluating to the tool name the call exercises. */
  action: string;
  /** CEL expression, evaluating to the H3 cell the call acts in. */
  resource: string;
  /** Extra context entries: name → CEL expression (any JSON value). */
  context?: Record<string, string>;
}

/** docs/protocol.md §2.9's authorization context: what the executing server attests for a call. */
export interface CoazContext {
  /** The executing agent's public key. */
  agent_identity: string;
  jurisdiction: { h3_cell: string | null; country_code: string | null; regulation: string[] };
  delegation: { principal_pk: string; cert_hash: string; trust_tier: string };
  audit: { epoch_index: number; chain_tip_hash: string };
}

export interface MappedRequest {
  subject: string;
  action: string;
  resource: string;
  /** The base CoazContext plus the mapping's context entries. */
  context: Record<string, unknown>;
}

export const MAX_EXPRESSION_CHARS = 2048;
const BASE_CONTEXT_KEYS = ['agent_identity', 'jurisdiction', 'delegation', 'audit'] as const;

const expression = z.string().min(1).max(MAX_EXPRESSION_CHARS);

export const coazMappingSchema = z.strictObject({
  subject: expression,
  action: expression,
  resource: expression,
  context: z
    .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'must be an identifier'), expression)
    .refine((entries) => Object.keys(entries).length <= 32, 'at most 32 entries')
    .refine(
      (entries) => !BASE_CONTEXT_KEYS.some((key) => Object.hasOwn(entries, key)),
      `may not replace ${BASE_CONTEXT_KEYS.join(', ')}`,
    )
    .optional(),
});

// Compile-time proof that the schema's output is the public interface.
const _schemaMatchesInterface = (parsed: z.output<typeof coazMappingSchema>): CoazMapping => parsed;

// Built once: instantiating an Environment is the expensive part of cel-js.
const environment = new Environment({
  unlistedVariablesAreDyn: false,
  limits: { maxAstNodes: 1000, maxDepth: 32, maxListElements: 256, maxMapEntries: 64, maxCallArguments: 8 },
})
  .registerVariable('params', 'map')
  .registerVariable('claims', 'dyn')
  .registerVariable('context', 'map')
  .registerVariable('tool', 'string');

type Compiled = { ok: true; run: ParseResult; type: string } | { ok: false; message: string };

const COMPILE_CACHE_LIMIT = 512;
const compiled = new Map<string, Compiled>();

/** CEL's one-line message (its `message` carries a multi-line source excerpt). */
function celMessage(error: unknown): string {
  const summary = (error as { summary?: unknown } | null)?.summary;
  if (typeof summary === 'string' && summary !== '') return summary;
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0] ?? message;
}

function compile(source: string): Compiled {
  const hit = compiled.get(source);
  if (hit !== undefined) return hit;
  let result: Compiled;
  try {
    const run = environment.parse(source);
    const checked = run.check();
    result = checked.valid
      ? { ok: true, run, type: checked.type ?? 'dyn' }
      : { ok: false, message: celMessage(checked.error) };
  } catch (error) {
    result = { ok: false, message: celMessage(error) };
  }
  if (compiled.size >= COMPILE_CACHE_LIMIT) compiled.delete(compiled.keys().next().value as string);
  compiled.set(source, result);
  return result;
}

const STRING_RESULTS = new Set(['string', 'dyn']);

/** Parses and type-checks every expression of `mapping` (e.g. at startup); the first failure names its expression. */
export function compileCoazMapping(mapping: CoazMapping): Check<void> {
  const shape = coazMappingSchema.safeParse(mapping);
  if (!shape.success) {
    const issue = shape.error.issues[0];
    return fail('coaz_error', `x-coaz-mapping ${issue?.path.join('.') || 'mapping'}: ${issue?.message}`);
  }
  for (const [name, source] of expressionsOf(shape.data)) {
    const c = compile(source);
    if (!c.ok) return fail('coaz_error', describe(name, source, c.message));
    if (!name.startsWith('context.') && !STRING_RESULTS.has(c.type)) {
      return fail('coaz_error', describe(name, source, `must evaluate to a string, not ${c.type}`));
    }
  }
  return pass(undefined);
}

function expressionsOf(mapping: CoazMapping): [string, string][] {
  return [
    ['subject', mapping.subject],
    ['action', mapping.action],
    ['resource', mapping.resource],
    ...Object.entries(mapping.context ?? {}).map(([key, source]): [string, string] => [`context.${key}`, source]),
  ];
}

const describe = (name: string, source: string, message: string): string =>
  `x-coaz-mapping expression ${name} (${JSON.stringify(source)}) failed: ${message}`;

/** A JSON value as CEL sees it: undefined fields dropped. */
function toCel(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toCel);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) if (item !== undefined) out[key] = toCel(item);
    return out;
  }
  return value;
}

/** A CEL result as JSON; throws TypeError naming what cannot be represented. */
function fromCel(value: unknown, depth = 0): unknown {
  if (depth > 32) throw new TypeError('the value is nested too deeply');
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`${value} is not a JSON number`);
    return value;
  }
  if (typeof value === 'bigint') {
    if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) return value.toString();
    return Number(value);
  }
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map((item) => fromCel(item, depth + 1));
  if (value instanceof Map) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of value) out[String(key)] = fromCel(item, depth + 1);
    return out;
  }
  if (value instanceof Uint8Array) throw new TypeError('bytes are not a JSON value');
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = fromCel(item, depth + 1);
    return out;
  }
  throw new TypeError(
    `a ${typeof value === 'object' ? (value.constructor?.name ?? 'object') : typeof value} is not a JSON value`,
  );
}

/**
 * Evaluates `mapping` for one call. Fails with `coaz_error` (the expression named, CEL's message) on a parse,
 * type or evaluation error, or a result of the wrong type; never throws.
 */
export function evaluateCoazMapping(
  mapping: CoazMapping,
  vars: { params: Record<string, unknown>; claims: IdnTokenClaims | null; tool: string; context: CoazContext },
): Check<MappedRequest> {
  const compiledMapping = compileCoazMapping(mapping);
  if (!compiledMapping.ok) return compiledMapping;
  const input = {
    params: toCel(vars.params),
    claims:
      vars.claims === null ? null : { ...(toCel(vars.claims) as object), idn_epoch: BigInt(vars.claims.idn_epoch) },
    tool: vars.tool,
    context: {
      ...(toCel(vars.context) as object),
      audit: { ...vars.context.audit, epoch_index: BigInt(vars.context.audit.epoch_index) },
    },
  };

  const values = new Map<string, unknown>();
  for (const [name, source] of expressionsOf(mapping)) {
    const c = compile(source);
    if (!c.ok) return fail('coaz_error', describe(name, source, c.message));
    let value: unknown;
    try {
      value = c.run(input);
    } catch (error) {
      return fail('coaz_error', describe(name, source, celMessage(error)));
    }
    if (name.startsWith('context.')) {
      try {
        values.set(name, fromCel(value));
      } catch (error) {
        return fail('coaz_error', describe(name, source, (error as Error).message));
      }
    } else if (typeof value !== 'string' || value === '') {
      const got = value === '' ? 'an empty string' : value === null ? 'null' : typeof value;
      return fail('coaz_error', describe(name, source, `must evaluate to a non-empty string, got ${got}`));
    } else {
      values.set(name, value);
    }
  }
  const context: Record<string, unknown> = { ...vars.context };
  for (const [name, value] of values) if (name.startsWith('context.')) context[name.slice('context.'.length)] = value;
  return pass({
    subject: values.get('subject') as string,
    action: values.get('action') as string,
    resource: values.get('resource') as string,
    context,
  });
}

/** A refused mapped request: `coaz_denied`, with the docs/protocol.md §2.8 violation it amounts to. */
export type CoazRefusal = Failure & { violation: ViolationType; severity: Severity };
/** A Check<void> whose failure also says which violation it is. */
export type CoazDecision = { ok: true; value: undefined } | CoazRefusal;

const refuse = (violation: ViolationType, detail: string): CoazRefusal => ({
  ...fail('coaz_denied', `authorization mapping refused: ${detail}`),
  violation,
  severity: 'critical',
});

/**
 * Decides a mapped request against `certificate` (the last link) and the chain's `grant`, at `nowMs`; with
 * `claims`, on behalf of the token's agent (see the header). Refusals are `coaz_denied` carrying the violation.
 */
export function checkCoazRequest(
  mapped: MappedRequest,
  input: {
    certificate: DelegationCertificate;
    grant?: ChainRights;
    nowMs: number;
    claims?: IdnTokenClaims | null;
  },
): CoazDecision {
  const { certificate: cert, grant } = input;
  const claims = input.claims ?? null;
  if (!(input.nowMs >= Date.parse(cert.not_before) && input.nowMs <= Date.parse(cert.not_after))) {
    return refuse('cert_expired', `the delegation certificate is not active (${cert.not_before} to ${cert.not_after})`);
  }

  const expected = claims === null ? cert.agent_pk : claims.idn_agent_pk;
  if (mapped.subject !== expected) {
    return refuse(
      'facet_violation',
      `subject ${mapped.subject} is not the acting agent ${expected}${claims === null ? '' : ' (the bearer token agent)'}`,
    );
  }

  // The tool rules of core/tool-preflight.ts, applied to the mapped action.
  const refusal = toolRefusal(cert, grant, mapped.action);
  if (refusal !== null) {
    return refuse('facet_violation', `action "${mapped.action}" is ${refusal} by the delegation certificate`);
  }

  if (!isCell(mapped.resource)) {
    return refuse('jurisdiction_breach', `resource ${JSON.stringify(mapped.resource)} is not a valid H3 cell`);
  }
  if (!cellCoveredBy(cert.h3_cells, mapped.resource)) {
    return refuse(
      'jurisdiction_breach',
      `resource ${mapped.resource} is outside the delegated cells ${cert.h3_cells.join(', ') || '(none)'}`,
    );
  }
  if (claims !== null && !cellCoveredBy(claims.idn_h3_cells, mapped.resource)) {
    return refuse(
      'jurisdiction_breach',
      `resource ${mapped.resource} is outside the bearer token's cells ${claims.idn_h3_cells.join(', ') || '(none)'}`,
    );
  }
  return { ok: true, value: undefined };
}
