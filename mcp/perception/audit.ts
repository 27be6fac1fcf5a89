/**
 * The audit wrapper (items 4 and 5): the only way a perception tool reaches an MCP server.
 *
 * Per call:
 *   1. pre-flight (core/tool-preflight.ts) against the agent's certificate and its chain's rights: active,
 *      cell inside the certificate's cells, facet, tool allowed and not denied, max_ops_per_hour. On failure the tool
 *      never runs: a `blocked` breadcrumb carrying `meta.violation` is appended, the violation is stored
 *      (with that block's index), and the caller gets `isError: true` saying why.
 *   2. the tool runs; its value (or its ToolError) is digested into the breadcrumb's context.
 *   3. the breadcrumb is signed and appended under this agent's chain lock, so concurrent calls never fork
 *      the chain. If it cannot be persisted, a critical `chain_break` violation is stored and the tool's
 *      result is withheld: nothing leaves the server unaudited.
 *
 * Rate limit: `max_ops_per_hour` counts the calls that passed pre-flight (outcome ok or error) in the last
 * 60 minutes, a sliding window. It is counted from the store's own blocks once (first call after start,
 * so a restart does not reset it) and kept in memory afterwards; check and count happen in one synchronous
 * step, so concurrent calls cannot overshoot it. One server process writes an agent's chain (the store's
 * record_conflict refuses a second writer's fork; this process then re-reads the tip and retries).
 *
 * Calls whose arguments fail the tool's zod schema are refused by the MCP SDK before this wrapper runs
 * (the error text names the field): nothing ran and nothing acted in a cell, so they leave no breadcrumb.
 *
 * Bearer tokens: a call arriving in an MCP session bound to a token's agent (server.ts verifies the
 * token on every request; the SDK hands it to the tool handler as `extra.authInfo`) runs ON BEHALF of that
 * agent. The server still acts under its own certificate and signs its own chain (this is the server's audit
 * record of what it did and for whom), so pre-flight is the same plus: a tool that names a cell must name one
 * inside the token's `idn_h3_cells` (else a `jurisdiction_breach`). Tools that name no cell (the idn_* tools)
 * act at the server's default cell on the server's own chain, not in the agent's territory, and are not
 * limited by the token's cells. Every breadcrumb of such a call records `meta.on_behalf_of` (the agent key)
 * and `meta.jti` (the token); the tool's context keeps the server's agent as `agentPk` (the idn_* tools' "own
 * agent" is the chain they report on) and gets the token agent as `onBehalfOf`.
 *
 * Anonymous callers (no bearer token) are the least trusted (docs/security.md §5): the tool policy judges their
 * calls at the lowest tier (`provisioned`), not at the server agent's own, and their breadcrumbs carry
 * `meta.anonymous: true`, which no trust score counts as an operation (core/trust-score.ts isOperation), so
 * anonymous calls never raise the server agent's trust. A `principalOnly` tool (idn_roll_epoch, and POST
 * /epoch/roll through `rollRefusal`) runs only for a token whose root principal is the server's own.
 *
 * Authorization mappings (core/coaz-mapping.ts): after pre-flight passes, a tool declaring `coaz`
 * has its mapping evaluated with the call's params, the token's claims (null without one) and a CoazContext
 * describing the executing server: its agent key, the jurisdiction of the call's cell, its root principal,
 * cert_hash and trust tier (tier_at_close of its last epoch, `provisioned` before one; sovereign is claimed as
 * certified), its current epoch index and chain tip. The mapped request is checked against the certificate
 * (checkCoazRequest). Either failure blocks the call before the tool runs with a `blocked` breadcrumb:
 *   - a refused request stores the violation it is (subject or action: `facet_violation`; resource outside
 *     the cells: `jurisdiction_breach`; critical), like a pre-flight failure, and meta carries `coaz`;
 *   - a CEL error (a broken mapping, or params the mapping cannot read) is a fault of the mapping, not an
 *     unauthorized act by the agent: no violation is stored, meta carries `coaz_error` naming the expression.
 * The mapping is evaluated synchronously between the rate check and the count, so concurrent calls still
 * cannot overshoot max_ops_per_hour; what it reads from the store (epoch, tip) is read before pre-flight.
 */
import { randomUUID } from 'node:crypto';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { breadcrumbContext, nextBreadcrumb, parseStoredBreadcrumb, signBreadcrumb } from '../../core/breadcrumb.js';
import type {
  AgentEpoch,
  BreadcrumbContent,
  Severity,
  StoredBreadcrumb,
  Violation,
  ViolationType,
} from '../../core/breadcrumb-types.js';
import { TRUST_TIERS } from '../../core/breadcrumb-types.js';
import { checkCoazRequest, evaluateCoazMapping, type CoazContext } from '../../core/coaz-mapping.js';
import { certificateHash, delegationChainRights, type DelegationCertificate } from '../../core/delegation-cert.js';
import { ServiceError } from '../../core/errors.js';
import { cellCoveredBy, cellResolution, isCell } from '../../core/h3-cell.js';
import type { KeyPair } from '../../core/identity.js';
import { chainTipHash, currentEpochIndex, tokenTrustTier } from '../../core/idn-token-claims.js';
import { resolveJurisdiction } from '../../core/jurisdiction.js';
import type { ToolPolicy } from '../../core/gates/tool-policy.js';
import { preflightTool, requiresHumanApproval, type ChainRights } from '../../core/tool-preflight.js';
import { describeZodIssue } from '../../core/zod-issue.js';
import { isOwnVerifiedMark, signVerifiedMark } from '../../core/verified-mark.js';
import type { AuditStore, VerifiedMark } from '../../store/audit-store.js';
import { defaultBlockVerifier, type BlockVerifier } from './block-verifier.js';
import { errorResult, okResult, outputSchemaOf } from '../shared/structured.js';
import { onBehalfOf, type OnBehalf } from './session-auth.js';
import { ToolError, type PerceptionTool } from './tool-def.js';

export const RATE_WINDOW_MS = 3_600_000;
/** The tier an anonymous caller is judged at by the tool policy: the lowest of the ladder. */
const LEAST_TIER = TRUST_TIERS[0];

/** A tool of any argument shape (each validates its own arguments with its own schema). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tool argument types are contravariant
export type AnyPerceptionTool = PerceptionTool<any>;
const APPEND_ATTEMPTS = 3;

export interface AuditLogger {
  error(object: object, message: string): void;
}

export interface AuditorDeps {
  store: AuditStore;
  agent: KeyPair;
  /** The certificate the agent acts under: the chain's last link. */
  certificate: DelegationCertificate;
  /** Root first, ending with `certificate`; verified by the caller (identity.ts) at startup. */
  chain: DelegationCertificate[];
  clock: () => number;
  /** Where a call acts when its tool names no cell (the idn_* tools). */
  defaultCell: string;
  logger?: AuditLogger;
  /** Gets the block_hash of every block this process signs, so reports skip re-verifying its signature. */
  signatureCache?: Set<string>;
  /** Checks each appended block's signature once before the verified-through mark moves over it. */
  blockVerifier?: BlockVerifier;
  /** Gate 5 (TOOL_POLICY_FILE): pre-flight refuses a tool the policy forbids at the call's cell. */
  toolPolicy?: ToolPolicy;
}

export type CallOutcome = BreadcrumbContent['context']['outcome'];

export interface AuditedCall {
  outcome: CallOutcome;
  /** What the MCP client receives. */
  result: CallToolResult;
  /** The tool's value when it ran and its breadcrumb was persisted. */
  value?: unknown;
  /** The breadcrumb of this call; null when none could be persisted. */
  blockIndex: number | null;
  violation?: Violation;
  /** True when the breadcrumb failed to persist and the result was withheld. */
  withheld?: boolean;
}

export interface Auditor {
  readonly agentPk: string;
  /** The certificate the agent acts under (the chain's last link). */
  readonly certificate: DelegationCertificate;
  /** The rights the whole chain puts in force, applied by pre-flight on top of the certificate's. */
  readonly rights: ChainRights;
  /** Whether a call of `toolName` needs a human principal's approval (require_human_approval). */
  requiresApproval(toolName: string): boolean;
  /**
   * Why a caller may not roll the agent's epoch (null when it may): only a bearer token whose root principal
   * (`idn_principal_pk`) is the human at the root of this server's own chain, the server's agent included.
   */
  rollRefusal(onBehalf: OnBehalf | null): string | null;
  /** Registers `tool` on `server`, wrapped: the one way a perception tool is exposed. */
  register<Shape extends z.ZodRawShape>(server: McpServer, tool: PerceptionTool<Shape>): void;
  /**
   * Validates `rawArgs` against the tool's schema, then runs it audited (HTTP paths such as /test/weather),
   * for the server's own agent or on behalf of a token's.
   */
  call<Shape extends z.ZodRawShape>(
    tool: PerceptionTool<Shape>,
    rawArgs: unknown,
    onBehalf?: OnBehalf | null,
  ): Promise<AuditedCall>;
  /** Runs `fn` holding this agent's chain lock (epoch rolls use it so no block lands mid-roll). */
  withChainLock<T>(fn: () => Promise<T>): Promise<T>;
  /** The index the next breadcrumb will get. */
  nextIndex(): Promise<number>;
}

/** A promise-chain mutex: each holder starts after the previous one settled. */
function createLock(): <T>(fn: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T>): Promise<T> => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => undefined);
    return run;
  };
}

/** What a failed tool may tell its caller: ToolError and ServiceError texts are written for clients. */
function describeFailure(error: unknown): { code: string; message: string; expected: boolean } {
  if (error instanceof ToolError) return { code: error.code, message: error.message, expected: true };
  if (error instanceof ServiceError) {
    return { code: error.code, message: error.detail ?? error.code, expected: true };
  }
  return { code: 'internal_error', message: 'the tool failed with an internal error', expected: false };
}

/** The tool's MCP `_meta`: its own, plus `coaz: true` and `x-coaz-mapping` when it declares a mapping (docs/protocol.md §2.9). */
export function toolMeta(tool: Pick<PerceptionTool, 'meta' | 'coaz'>): Record<string, unknown> {
  return { ...tool.meta, ...(tool.coaz ? { coaz: true, 'x-coaz-mapping': tool.coaz } : {}) };
}

/** Each tool's strict argument schema, built once (building a zod object costs more than checking with it). */
const callSchemas = new WeakMap<AnyPerceptionTool, z.ZodObject>();

export function createAuditor(deps: AuditorDeps): Auditor {
  const { store, agent, clock } = deps;
  const agentPk = agent.publicKey;
  if (deps.certificate.agent_pk !== agentPk) {
    throw new TypeError(`the certificate is issued to ${deps.certificate.agent_pk}, not the agent key ${agentPk}`);
  }
  const rights = delegationChainRights(deps.chain.length > 0 ? deps.chain : [deps.certificate]);
  const certHash = certificateHash(deps.certificate);
  const rootPrincipal = deps.chain[0]?.principal_pk ?? deps.certificate.principal_pk;
  const lock = createLock();

  function rollRefusal(onBehalf: OnBehalf | null): string | null {
    if (onBehalf === null) {
      return `rolling an epoch needs a bearer token of an agent delegated by this server's principal ${rootPrincipal}`;
    }
    if (onBehalf.claims.idn_principal_pk === rootPrincipal) return null;
    return `the token's principal ${onBehalf.claims.idn_principal_pk} is not this server's principal ${rootPrincipal}: only its agents may roll an epoch`;
  }

  // The chain tip as this process last wrote or read it; undefined = read it from the store.
  let tip: StoredBreadcrumb | null | undefined;
  // The verified-through mark as this process last wrote or checked it (its own key); undefined = not read yet.
  let mark: VerifiedMark | null | undefined;
  const blockVerifier = deps.blockVerifier ?? defaultBlockVerifier;
  // Instants (ms) of the calls that passed pre-flight within the rate window, oldest first.
  let recentOps: number[] | undefined;
  let loadingOps: Promise<void> | undefined;
  // The agent's last epoch (null: none yet; undefined: read it). Epochs are rolled under withChainLock,
  // which forgets it.
  let lastEpoch: AgentEpoch | null | undefined;

  async function loadRecentOps(): Promise<void> {
    if (recentOps !== undefined) return;
    loadingOps ??= (async () => {
      const since = clock() - RATE_WINDOW_MS;
      const blocks = await store.blocks(agentPk, { from: new Date(since).toISOString() });
      const times: number[] = [];
      for (const stored of blocks) {
        const parsed = parseStoredBreadcrumb(stored);
        if (parsed.ok && parsed.value.context.outcome !== 'blocked') times.push(Date.parse(parsed.value.timestamp));
      }
      // Concurrent first calls may have counted themselves already: keep them.
      recentOps = [...times, ...(recentOps ?? [])].sort((a, b) => a - b);
    })().finally(() => {
      loadingOps = undefined;
    });
    await loadingOps;
  }

  function opsInWindow(now: number): number {
    const ops = recentOps ?? [];
    let drop = 0;
    while (drop < ops.length && (ops[drop] as number) <= now - RATE_WINDOW_MS) drop++;
    if (drop > 0) ops.splice(0, drop);
    return ops.length;
  }

  type Append = { ok: true; index: number } | { ok: false; detail: string };

  /** Signs and persists the next block; never throws. */
  function appendBreadcrumb(fields: Omit<BreadcrumbContent, 'index' | 'prev_hash' | 'timestamp'>): Promise<Append> {
    return lock(async (): Promise<Append> => {
      let lastError: unknown;
      for (let attempt = 0; attempt < APPEND_ATTEMPTS; attempt++) {
        try {
          const previous = tip !== undefined ? tip : await store.tip(agentPk);
          const content = nextBreadcrumb(previous, { ...fields, timestamp: new Date(clock()).toISOString() });
          const { stored } = signBreadcrumb(content, agent);
          await store.appendBlock(stored);
          deps.signatureCache?.add(stored.block_hash);
          tip = stored;
          await advanceMark(previous, stored);
          return { ok: true, index: content.index };
        } catch (error) {
          tip = undefined; // re-read: another writer may have moved the tip, or the store lost our write
          lastError = error;
          if (!(error instanceof ServiceError && error.code === 'record_conflict')) break;
        }
      }
      deps.logger?.error({ err: lastError, agent_pk: agentPk }, 'breadcrumb append failed');
      const message = lastError instanceof Error ? lastError.message : String(lastError);
      return { ok: false, detail: message };
    });
  }

  /**
   * Verify-then-mark (docs/architecture.md "Audit chains"): when the verified-through mark stands on the block
   * this one was chained to (or this is block 0), the new block passed every check but its signature by
   * construction (its text is the JCS of checked content, its index, prev_hash and timestamp continue
   * `previous`), so one Ed25519 verification lets the mark move up over it. Otherwise the mark stays where it is
   * and the next report verifies what lies above it. Called under the chain lock; a failure only leaves the mark
   * lower, never the call unaudited.
   */
  async function advanceMark(previous: StoredBreadcrumb | null, block: StoredBreadcrumb): Promise<void> {
    try {
      const continues = (m: VerifiedMark | null | undefined): boolean =>
        previous === null
          ? block.index === 0
          : m !== null && m !== undefined && m.index === previous.index && m.block_hash === previous.block_hash;
      if (!continues(mark)) {
        // A report (or another writer) may have moved it since: read it again, checking only a new signature.
        const held = await store.verifiedThrough(agentPk);
        if (held !== null && held.signature !== mark?.signature) {
          mark = isOwnVerifiedMark(held, agentPk, agentPk) ? held : null;
        }
        if (!continues(mark)) return;
      }
      const [verified] = await blockVerifier.verify([[agentPk, block.data_to_sign, block.signature]]);
      if (verified !== true) {
        deps.logger?.error({ agent_pk: agentPk, index: block.index }, 'a signed breadcrumb does not verify');
        return;
      }
      const next = signVerifiedMark(agent, agentPk, block.index, block.block_hash);
      await store.markVerified(agentPk, next);
      mark = next;
    } catch (error) {
      mark = undefined;
      deps.logger?.error({ err: error, agent_pk: agentPk }, 'moving the verified-through mark failed');
    }
  }

  async function storeViolation(violation: Violation): Promise<void> {
    try {
      await store.addViolation(violation);
    } catch (error) {
      deps.logger?.error({ err: error, violation }, 'storing a violation failed');
    }
  }

  function violationRecord(
    fields: Pick<Violation, 'type' | 'severity' | 'tool_name' | 'h3_cell' | 'detail' | 'block_index'>,
  ): Violation {
    return { version: 1, id: randomUUID(), agent_pk: agentPk, at: new Date(clock()).toISOString(), ...fields };
  }

  /** The result is withheld: the breadcrumb that would account for it could not be persisted. */
  async function chainBreak(toolName: string, cell: string | null, detail: string): Promise<AuditedCall> {
    const violation = violationRecord({
      type: 'chain_break',
      severity: 'critical',
      tool_name: toolName,
      h3_cell: cell,
      detail: `breadcrumb not persisted: ${detail}`,
      block_index: null,
    });
    await storeViolation(violation);
    return {
      outcome: 'error',
      result: errorResult(
        'chain_break',
        'the audit breadcrumb of this call could not be persisted; the result is withheld',
        `${toolName}: the audit breadcrumb of this call could not be persisted (chain_break); the result is withheld`,
      ),
      blockIndex: null,
      violation,
      withheld: true,
    };
  }

  /** What a coaz context reads from the store: the last epoch (cached until an epoch roll) and the tip. */
  async function auditState(): Promise<{ lastEpoch: AgentEpoch | null; tip: StoredBreadcrumb | null }> {
    if (lastEpoch === undefined) {
      const epochs = await store.epochs(agentPk);
      lastEpoch = epochs[epochs.length - 1] ?? null;
    }
    return { lastEpoch, tip: tip !== undefined ? tip : await store.tip(agentPk) };
  }

  function coazContext(
    cell: string,
    state: { lastEpoch: AgentEpoch | null; tip: StoredBreadcrumb | null },
  ): CoazContext {
    const jurisdiction = isCell(cell) ? resolveJurisdiction(cell) : null;
    return {
      agent_identity: agentPk,
      jurisdiction: {
        h3_cell: jurisdiction === null ? null : cell,
        country_code: jurisdiction?.country_code ?? null,
        regulation: jurisdiction?.frameworks.map((f) => f.id) ?? [],
      },
      delegation: {
        principal_pk: deps.chain[0]?.principal_pk ?? deps.certificate.principal_pk,
        cert_hash: certHash,
        trust_tier: tokenTrustTier(state.lastEpoch?.tier_at_close ?? 'provisioned'),
      },
      audit: { epoch_index: currentEpochIndex(state.lastEpoch), chain_tip_hash: chainTipHash(state.tip) },
    };
  }

  type Where = Omit<BreadcrumbContent, 'index' | 'prev_hash' | 'timestamp' | 'context' | 'meta'>;

  /** Appends the `blocked` breadcrumb of a call that never ran, stores its violation (if any), answers why. */
  async function blockCall(input: {
    where: Where;
    args: unknown;
    cell: string;
    meta: Record<string, unknown>;
    violation?: { type: ViolationType; severity: Severity; detail: string };
    message: string;
  }): Promise<AuditedCall> {
    const { where, violation: v } = input;
    const appended = await appendBreadcrumb({
      ...where,
      context: breadcrumbContext(input.args, undefined, 'blocked'),
      meta: { ...input.meta, ...(v ? { violation: v.type, severity: v.severity } : {}) },
    });
    let violation: Violation | undefined;
    if (v !== undefined) {
      violation = violationRecord({
        type: v.type,
        severity: v.severity,
        tool_name: where.tool_name,
        h3_cell: input.cell,
        detail: v.detail,
        block_index: appended.ok ? appended.index : null,
      });
      await storeViolation(violation);
    }
    if (!appended.ok) await chainBreak(where.tool_name, input.cell, appended.detail);
    return {
      outcome: 'blocked',
      result: errorResult(v?.type ?? 'blocked', input.message, input.message),
      blockIndex: appended.ok ? appended.index : null,
      ...(violation ? { violation } : {}),
    };
  }

  async function execute<Shape extends z.ZodRawShape>(
    tool: PerceptionTool<Shape>,
    args: z.infer<z.ZodObject<Shape>>,
    options: { signal?: AbortSignal | undefined; onBehalf?: OnBehalf | null } = {},
  ): Promise<AuditedCall> {
    const onBehalf = options.onBehalf ?? null;
    const namedCell = tool.cellOf?.(args);
    const cell = namedCell ?? deps.defaultCell;
    // A block records a valid cell; a call naming an invalid one is judged (and blocked) by pre-flight,
    // and its block is placed at the default cell with the named cell in meta.
    const blockCell = isCell(cell) ? cell : deps.defaultCell;
    const where: Where = {
      loc_cell: blockCell,
      loc_res: cellResolution(blockCell),
      identity: agentPk,
      delegation_cert_hash: certHash,
      facet: tool.facet,
      tool_name: tool.name,
    };
    const callMeta = {
      ...(blockCell === cell ? {} : { requested_cell: String(cell) }),
      ...(onBehalf ? { on_behalf_of: onBehalf.agentPk, jti: onBehalf.jti } : { anonymous: true }),
    };
    const behalfText = onBehalf ? ` (on behalf of ${onBehalf.agentPk})` : '';
    if (tool.principalOnly === true) {
      const refusal = rollRefusal(onBehalf);
      if (refusal !== null) {
        // The caller's standing, not the agent's conduct: no violation is stored.
        return blockCall({
          where,
          args,
          cell,
          meta: { ...callMeta, refused: 'principal_only' },
          message: `${tool.name} blocked: ${refusal}`,
        });
      }
    }

    // Read before the check: nothing may await between the rate check and the count.
    const policy = deps.toolPolicy !== undefined && deps.toolPolicy.rules.length > 0 ? deps.toolPolicy : undefined;
    const state = tool.coaz !== undefined || policy !== undefined ? await auditState() : undefined;
    await loadRecentOps();
    const startedAt = clock();
    let pre = preflightTool({
      certificate: deps.certificate,
      grant: rights,
      toolName: tool.name,
      facet: tool.facet,
      cell,
      nowMs: startedAt,
      opsInLastHour: opsInWindow(startedAt),
      // The tier of the agent the call is for: the token's claim on its behalf; an anonymous caller gets the
      // least, never the server agent's own (which its calls could otherwise raise and then borrow).
      ...(policy !== undefined
        ? { policy: { toolPolicy: policy, agentTier: onBehalf?.claims.idn_trust_tier ?? LEAST_TIER } }
        : {}),
    });
    if (pre.ok && onBehalf !== null && namedCell !== undefined && !cellCoveredBy(onBehalf.claims.idn_h3_cells, cell)) {
      pre = {
        ok: false,
        violation: 'jurisdiction_breach',
        severity: 'critical',
        detail: `cell ${cell} is outside the bearer token's cells ${onBehalf.claims.idn_h3_cells.join(', ') || '(none)'}`,
      };
    }
    if (!pre.ok) {
      return blockCall({
        where,
        args,
        cell,
        meta: callMeta,
        violation: { type: pre.violation, severity: pre.severity, detail: `${pre.detail}${behalfText}` },
        message: `${tool.name} blocked by delegation pre-flight (${pre.violation}): ${pre.detail}`,
      });
    }

    let coazMeta: Record<string, unknown> = {};
    if (tool.coaz !== undefined && state !== undefined) {
      const mapped = evaluateCoazMapping(tool.coaz, {
        params: args as Record<string, unknown>,
        claims: onBehalf?.claims ?? null,
        tool: tool.name,
        context: coazContext(cell, state),
      });
      if (!mapped.ok) {
        return blockCall({
          where,
          args,
          cell,
          meta: { ...callMeta, coaz_error: mapped.detail },
          message: `${tool.name} blocked by its authorization mapping (${mapped.error}): ${mapped.detail}`,
        });
      }
      const { subject, action, resource } = mapped.value;
      coazMeta = { coaz: { subject, action, resource } };
      const decision = checkCoazRequest(mapped.value, {
        certificate: deps.certificate,
        grant: rights,
        nowMs: startedAt,
        claims: onBehalf?.claims ?? null,
      });
      if (!decision.ok) {
        return blockCall({
          where,
          args,
          cell,
          meta: { ...callMeta, ...coazMeta },
          violation: {
            type: decision.violation,
            severity: decision.severity,
            detail: `${decision.detail}${behalfText}`,
          },
          message: `${tool.name} blocked (${decision.violation}): ${decision.detail}`,
        });
      }
    }
    // Counted before the tool runs, synchronously after the check: concurrent calls see each other.
    recentOps?.push(startedAt);

    let outcome: CallOutcome;
    let value: unknown;
    let failure: ReturnType<typeof describeFailure> | undefined;
    try {
      value = await tool.run(args, {
        agentPk,
        now: startedAt,
        ...(onBehalf ? { onBehalfOf: { agentPk: onBehalf.agentPk, jti: onBehalf.jti } } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
      outcome = 'ok';
    } catch (error) {
      failure = describeFailure(error);
      if (!failure.expected) deps.logger?.error({ err: error, tool: tool.name }, 'tool failed');
      outcome = 'error';
    }
    const durationMs = Math.max(0, clock() - startedAt);
    const digestOf = outcome === 'ok' ? (value ?? null) : { error: failure?.code, message: failure?.message };
    let context: BreadcrumbContent['context'];
    try {
      context = breadcrumbContext(args, digestOf, outcome);
    } catch {
      // A value JSON cannot represent cannot be digested either: it never leaves unaudited.
      outcome = 'error';
      failure = { code: 'internal_error', message: 'the tool returned a value that is not JSON', expected: false };
      context = breadcrumbContext(args, { error: failure.code, message: failure.message }, outcome);
    }
    const appended = await appendBreadcrumb({
      ...where,
      context,
      meta: { ...callMeta, ...coazMeta, duration_ms: durationMs, ...(failure ? { error: failure.code } : {}) },
    });
    if (!appended.ok) return chainBreak(tool.name, cell, appended.detail);
    if (outcome === 'error') {
      return {
        outcome,
        result: errorResult(
          failure?.code ?? 'internal_error',
          failure?.message ?? '',
          `${tool.name} failed (${failure?.code}): ${failure?.message}`,
        ),
        blockIndex: appended.index,
      };
    }
    return {
      outcome,
      result: okResult(value, namedCell),
      value,
      blockIndex: appended.index,
    };
  }

  return {
    agentPk,
    certificate: deps.certificate,
    rights,
    requiresApproval: (toolName) => requiresHumanApproval(deps.certificate, toolName, rights),
    rollRefusal,
    register(server, tool) {
      server.registerTool(
        tool.name,
        {
          title: tool.title,
          description: tool.description,
          // Strict: an argument the tool does not know is refused, not silently dropped.
          inputSchema: z.strictObject(tool.inputSchema),
          outputSchema: outputSchemaOf(tool.outputSchema),
          ...(tool.meta || tool.coaz ? { _meta: toolMeta(tool) } : {}),
        },
        // The SDK has validated the arguments against inputSchema (an error names the field).
        (async (
          args: z.infer<z.ZodObject<typeof tool.inputSchema>>,
          extra: { signal?: AbortSignal; authInfo?: AuthInfo },
        ) =>
          (await execute(tool, args, { signal: extra.signal, onBehalf: onBehalfOf(extra.authInfo) })).result) as never,
      );
    },
    async call(tool, rawArgs, onBehalf) {
      let schema = callSchemas.get(tool);
      if (schema === undefined) callSchemas.set(tool, (schema = z.strictObject(tool.inputSchema)));
      const parsed = schema.safeParse(rawArgs ?? {});
      if (!parsed.success) {
        const detail = describeZodIssue(parsed.error, 'arguments');
        return {
          outcome: 'error',
          result: errorResult('invalid_request', detail, `invalid arguments for ${tool.name}: ${detail}`),
          blockIndex: null,
        };
      }
      return execute(tool, parsed.data as z.infer<z.ZodObject<typeof tool.inputSchema>>, {
        onBehalf: onBehalf ?? null,
      });
    },
    withChainLock: (fn) =>
      lock(async () => {
        try {
          return await fn();
        } finally {
          lastEpoch = undefined; // the holder may have rolled an epoch
        }
      }),
    async nextIndex() {
      const current = tip !== undefined ? tip : await store.tip(agentPk);
      return current === null ? 0 : current.index + 1;
    },
  };
}
