/**
 * The fifth gate (docs/security.md, docs/protocol.md §1.7): which tools may execute for cells of which
 * jurisdictions or regulatory frameworks, optionally only above a trust tier. Pure: the policy arrives parsed
 * (bin/config.ts reads TOOL_POLICY_FILE), the place arrives resolved (core/jurisdiction.ts).
 *
 * A rule applies to a tool (registry tool id, or MCP tool name; "*" for all) at a place when the place is in
 * one of its `jurisdictions` (country, subdivision or group code such as EU, as `x-svc-jurisdiction` reads
 * them) or under one of its `frameworks` (framework ids such as GDPR). An applicable rule without a tier
 * denies the tool there; with `min_agent_tier` (the calling agent's ladder) and/or `min_worker_tier` (the
 * executing worker's ladder) it allows the tool only when each named tier is known and met. Every applicable
 * rule must pass; the first that does not is the one the refusal names. The empty policy allows everything.
 * Tool names compare normalised (core/gates/tool-scope.ts); a cell is judged at every place it touches, not only
 * at its centroid (`toolScopeRefusal`).
 *
 * A tier not known where the gate runs refuses (fail closed), with one exception: at request entry the worker
 * is not chosen yet, so a `min_worker_tier` condition is left to the worker's own check at take-up.
 */
import { z } from 'zod';
import { isInJurisdiction, isKnownJurisdictionCode, touchedJurisdictions, type Jurisdiction } from '../jurisdiction.js';
import { AGENT_TIERS, agentTierRank, WORKER_TIERS, workerTierRank, type AgentTier, type WorkerTier } from '../tiers.js';
import { normalizeToolName, toolScope } from './tool-scope.js';

export const ANY_TOOL = '*';

const ruleSchema = z
  .strictObject({
    id: z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'rule ids are 1-64 characters of A-Z a-z 0-9 _ . : -'),
    description: z.string().max(500).optional(),
    tools: z.array(z.string().min(1).max(64)).min(1),
    jurisdictions: z
      .array(z.string())
      .refine((codes) => codes.every((c) => isKnownJurisdictionCode(c.toUpperCase())), 'unknown jurisdiction code')
      .optional(),
    frameworks: z.array(z.string().min(1)).optional(),
    min_agent_tier: z.enum(AGENT_TIERS).optional(),
    min_worker_tier: z.enum(WORKER_TIERS).optional(),
  })
  .refine((rule) => (rule.jurisdictions?.length ?? 0) + (rule.frameworks?.length ?? 0) > 0, {
    message: 'a rule names at least one jurisdiction or framework',
  });

export const toolPolicySchema = z.strictObject({
  version: z.literal(1),
  rules: z.array(ruleSchema).max(1000),
});
export type ToolPolicy = z.infer<typeof toolPolicySchema>;
export type ToolPolicyRule = ToolPolicy['rules'][number];

/** The documented default: no rules, every tool may run wherever the other gates let it. */
export const EMPTY_TOOL_POLICY: ToolPolicy = Object.freeze({ version: 1, rules: [] }) as ToolPolicy;

/** A policy file's JSON → the policy, or the first problem with its path (for a startup error). */
export function parseToolPolicy(json: unknown): { ok: true; policy: ToolPolicy } | { ok: false; detail: string } {
  const parsed = toolPolicySchema.safeParse(json);
  if (parsed.success) {
    const ids = new Set<string>();
    for (const rule of parsed.data.rules) {
      if (ids.has(rule.id)) return { ok: false, detail: `rules: rule id ${rule.id} is used twice` };
      ids.add(rule.id);
    }
    return { ok: true, policy: parsed.data };
  }
  const issue = parsed.error.issues[0];
  return { ok: false, detail: `${issue?.path.join('.') || 'policy'}: ${issue?.message}` };
}

/** Who is asking and who executes, as far as the gate knows. undefined: not known here. */
export interface ToolCaller {
  agentTier?: AgentTier | undefined;
  workerTier?: WorkerTier | undefined;
  /** Request entry: the worker is chosen later and checks `min_worker_tier` itself at take-up. */
  workerChosenLater?: boolean;
}

export interface ToolPolicyRefusal {
  tool: string;
  /** The place refused: the cell and its country (or subdivision) code. */
  h3_cell: string;
  jurisdiction: string;
  rule: string;
  detail: string;
}

const placeName = (place: Jurisdiction): string => place.subdivision_code ?? place.country_code ?? 'no jurisdiction';

/**
 * Why the rule applies at this place (the code or framework it matched), or null when it does not. `tool` is
 * normalised (core/gates/tool-scope.ts), and so is each tool the rule names.
 */
function matches(rule: ToolPolicyRule, tool: string, place: Jurisdiction): string | null {
  if (!rule.tools.some((t) => t === ANY_TOOL || normalizeToolName(t) === tool)) return null;
  const code = rule.jurisdictions?.find((c) => isInJurisdiction(place, c));
  if (code !== undefined) return `jurisdiction ${code.toUpperCase()}`;
  const framework = rule.frameworks?.find((f) => place.frameworks.some((pf) => pf.id === f));
  return framework === undefined ? null : `framework ${framework}`;
}

/** The first rule refusing tool `name` (in any case, width or spacing) at `place` for `caller`, or null. */
export function toolPolicyRefusal(
  policy: ToolPolicy,
  name: string,
  place: Jurisdiction,
  caller: ToolCaller,
): ToolPolicyRefusal | null {
  const tool = normalizeToolName(name);
  for (const rule of policy.rules) {
    const why = matches(rule, tool, place);
    if (why === null) continue;
    const refuse = (reason: string): ToolPolicyRefusal => ({
      tool,
      h3_cell: place.h3_cell,
      jurisdiction: placeName(place),
      rule: rule.id,
      detail:
        `tool ${tool} is not permitted in cell ${place.h3_cell} (${placeName(place)}, ${why}) ` +
        `by tool policy rule ${rule.id}: ${reason}`,
    });
    if (rule.min_agent_tier === undefined && rule.min_worker_tier === undefined) return refuse('denied there');
    if (rule.min_agent_tier !== undefined) {
      const tier = caller.agentTier;
      if (tier === undefined)
        return refuse(`it needs agent trust tier ${rule.min_agent_tier}, and the caller's is not known here`);
      if (agentTierRank(tier) < agentTierRank(rule.min_agent_tier)) {
        return refuse(`it needs agent trust tier ${rule.min_agent_tier}; the caller is ${tier}`);
      }
    }
    if (rule.min_worker_tier !== undefined && !caller.workerChosenLater) {
      const tier = caller.workerTier;
      if (tier === undefined)
        return refuse(`it needs worker trust tier ${rule.min_worker_tier}, and no worker tier is known here`);
      if (workerTierRank(tier) < workerTierRank(rule.min_worker_tier)) {
        return refuse(`it needs worker trust tier ${rule.min_worker_tier}; this worker is ${tier}`);
      }
    }
  }
  return null;
}

/** Every (tool, place) pair checked in order; the first refusal, or null. */
export function firstToolPolicyRefusal(
  policy: ToolPolicy,
  tools: readonly string[],
  places: readonly Jurisdiction[],
  caller: ToolCaller,
): ToolPolicyRefusal | null {
  if (policy.rules.length === 0) return null;
  for (const tool of tools) {
    for (const place of places) {
      const refusal = toolPolicyRefusal(policy, tool, place, caller);
      if (refusal !== null) return refusal;
    }
  }
  return null;
}

/**
 * Gate 5 as every check point runs it (request entry, take-up, the MCP pre-flight): each tool of the scope
 * (core/gates/tool-scope.ts) at every place each of the (valid) cells touches (core/jurisdiction.ts
 * `touchedJurisdictions`), so a cell is refused when any jurisdiction it touches refuses. The first refusal, or null.
 */
export function toolScopeRefusal(
  policy: ToolPolicy,
  tools: readonly string[],
  cells: readonly string[],
  caller: ToolCaller,
): ToolPolicyRefusal | null {
  if (policy.rules.length === 0 || tools.length === 0) return null;
  const places = [...new Set(cells)].flatMap((cell) => touchedJurisdictions(cell));
  return firstToolPolicyRefusal(policy, tools, places, caller);
}

/**
 * Gate 5 at take-up, the same check wherever a worker takes a step or a completion (a `geofabric worker`'s guard,
 * the gateway's embedded worker): the tools it carries, at every place its cells touch (the job's cell, the
 * worker's own), for this worker's tier. The calling agent is not known there, so a `min_agent_tier` rule refuses.
 */
export function takeUpToolRefusal(
  policy: ToolPolicy | undefined,
  taken: { tools: readonly string[] | undefined; cells: readonly string[]; workerTier?: WorkerTier | undefined },
): ToolPolicyRefusal | null {
  if (policy === undefined || policy.rules.length === 0 || !taken.tools?.length) return null;
  const tools = toolScope({ kind: 'taken', tools: taken.tools });
  return toolScopeRefusal(policy, tools, taken.cells, { workerTier: taken.workerTier });
}
