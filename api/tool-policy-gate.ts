import { ServiceError } from '../core/errors.js';
import type { JurisdictionContext } from '../core/gates/jurisdiction.js';
import type { RequestScope } from '../core/gates/request-scope.js';
import { toolScopeRefusal, type ToolPolicy } from '../core/gates/tool-policy.js';
import type { GateContext } from './gates.js';

/**
 * Gate 5 at request entry (docs/security.md): every tool the request can cause to run, on any route (the scope
 * core/gates/tool-scope.ts collects: compute steps' tools, a chat's `svc.tools` and function tools), at every
 * jurisdiction each cell it names touches (job cell and step cells, gate 2's `places`), against the tool policy.
 * The gateway does not know the calling agent's trust tier (that lives with the agent's audit chain), so a
 * `min_agent_tier` rule refuses here; a `min_worker_tier` rule is left to the worker, which checks it at take-up
 * (activities/compute/worker-guard.ts, activities/inference/inference-engine.ts). Runs after gate 4, so nothing
 * of a refused request was dispatched.
 */
export function toolPolicyGate(policy: ToolPolicy | undefined): (ctx: GateContext) => void {
  return (ctx) => {
    if (policy === undefined || policy.rules.length === 0) return;
    const scope = ctx.state.scope as RequestScope | undefined;
    const place = (ctx.state.gates as { place?: JurisdictionContext | null } | undefined)?.place;
    if (!scope || scope.tools.length === 0 || !place) return;
    const cells = place.places.map((p) => p.h3_cell);
    const refusal = toolScopeRefusal(policy, scope.tools, cells, { workerChosenLater: true });
    if (refusal !== null) throw new ServiceError('tool_not_permitted', refusal.detail);
  };
}
