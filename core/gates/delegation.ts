import { fail, pass, type Check } from '../check.js';
import { decodeDelegationHeader, verifyDelegationChain, type DelegationGrant } from '../delegation-cert.js';
import { EPOCH_MS } from '../epoch.js';

/** Gate 3's outcome: on whose authority the request runs. */
export type Authority =
  | { kind: 'delegated'; grant: DelegationGrant }
  /** No certificate: the requester acts as its own principal (allowed unless delegation is required). */
  | { kind: 'self'; pk: string }
  /** An unsigned route without a certificate: nobody in particular. */
  | { kind: 'anonymous' };

export interface DelegationInput {
  header: string | undefined;
  /** The authenticated requester (gate 1), or undefined on unsigned routes. */
  requesterPk: string | undefined;
  requireDelegation: boolean;
  nowMs: number;
  jobCell: string | undefined;
  /** Every other cell the request names (step center_cell, context.h3_cell…): each must be delegated too. */
  cells: readonly string[];
  /** TRUSTED_PRINCIPALS: when non-empty, the chain's root must be one of them. */
  trustedPrincipals?: ReadonlySet<string>;
  facets: string[];
  tools: string[];
}

/**
 * The certificate chain must verify, start at a trusted principal (when any are configured), be valid now,
 * authorize every cell the request names (the job cell and each step's), facets and tools, and end at
 * the requester. On an unsigned route nobody proved who is asking, so a supplied chain is checked for
 * everything except its end agent, and none is required.
 */
export function checkDelegation(input: DelegationInput): Check<Authority> {
  if (input.header === undefined || input.header === '') {
    if (input.requesterPk === undefined) return pass({ kind: 'anonymous' });
    if (input.requireDelegation) {
      return fail(
        'delegation_required',
        'x-svc-delegation-cert is required: the agent must trace to a human principal',
      );
    }
    return pass({ kind: 'self', pk: input.requesterPk });
  }
  const chain = decodeDelegationHeader(input.header);
  if (!chain.ok) return chain;
  const last = chain.value[chain.value.length - 1];
  const grant = verifyDelegationChain(chain.value, {
    now: input.nowMs,
    agentPk: input.requesterPk ?? last?.agent_pk ?? '',
    ...(input.jobCell === undefined ? {} : { h3Cell: input.jobCell }),
    h3Cells: input.cells,
    ...(input.trustedPrincipals === undefined ? {} : { trustedPrincipals: input.trustedPrincipals }),
    facets: input.facets,
    tools: input.tools,
  });
  return grant.ok ? pass({ kind: 'delegated', grant: grant.value }) : grant;
}

/** Fixed hourly windows aligned to epochs, so "per hour" means the same hour everywhere. */
export function rateWindow(nowMs: number, genesisMs: number): { start: number; end: number } {
  const start = genesisMs + Math.floor((nowMs - genesisMs) / EPOCH_MS) * EPOCH_MS;
  return { start, end: start + EPOCH_MS };
}

export function checkRateLimit(count: number, maxPerHour: number, windowEnd: number, nowMs: number): Check<number> {
  if (count <= maxPerHour) return pass(count);
  const seconds = Math.max(1, Math.ceil((windowEnd - nowMs) / 1000));
  return fail('rate_limit', `max_ops_per_hour ${maxPerHour} exceeded; retry after ${seconds} s`);
}
