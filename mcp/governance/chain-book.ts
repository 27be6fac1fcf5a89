/**
 * Which delegation chain a governance tool judges: the one the caller passes (`delegation_chain`:
 * a certificate or chain, as JSON or as the base64 of the `x-svc-delegation-cert` header), else the one the
 * server knows for `agent_pk` (its configured subject, IDN_DELEGATION_CERT, and any chains it was given at
 * construction), else none — the caller is told no certificate is known for that agent.
 *
 * Known chains are indexed by the agent they delegate to (the last link's agent_pk). They are not verified
 * here: judging them (signature, time, narrowing) is what the tools answer.
 */
import { checkJsonText } from '../../core/strict-json.js';
import {
  decodeDelegationHeader,
  parseDelegationChain,
  type DelegationCertificate,
} from '../../core/delegation-cert.js';
import { fail, pass, type Check } from '../../core/check.js';

export interface ChainBook {
  /** The configured subject's agent (the last link's agent_pk), or null when none is configured. */
  readonly subjectPk: string | null;
  /** The chain the server knows for `agentPk`, or undefined. */
  chainOf(agentPk: string): DelegationCertificate[] | undefined;
  /** Every agent the server knows a chain for, the subject first. */
  agents(): string[];
}

const lastAgent = (chain: readonly DelegationCertificate[]): string | undefined => chain[chain.length - 1]?.agent_pk;

export function createChainBook(
  subject: DelegationCertificate[] | null,
  knownChains: readonly DelegationCertificate[][] = [],
): ChainBook {
  const byAgent = new Map<string, DelegationCertificate[]>();
  // The subject wins over a known chain for the same agent: it is what the operator configured.
  for (const chain of [...knownChains].reverse()) {
    const pk = lastAgent(chain);
    if (pk !== undefined) byAgent.set(pk, chain);
  }
  const subjectPk = subject === null ? null : (lastAgent(subject) ?? null);
  if (subject !== null && subjectPk !== null) byAgent.set(subjectPk, subject);
  return {
    subjectPk,
    chainOf: (agentPk) => byAgent.get(agentPk),
    agents: () => [...(subjectPk === null ? [] : [subjectPk]), ...[...byAgent.keys()].filter((k) => k !== subjectPk)],
  };
}

/** A `delegation_chain` argument: a certificate or chain as JSON (object, array, or their text), or base64. */
export function parseChainArgument(value: unknown): Check<DelegationCertificate[]> {
  if (typeof value !== 'string') return parseDelegationChain(value);
  const text = value.trim();
  if (text.startsWith('{') || text.startsWith('[')) {
    // Strict: a repeated key would let two readers of one argument see different chains.
    const json = checkJsonText(text, 'the chain');
    return json.ok ? parseDelegationChain(json.value) : fail('delegation_invalid', json.detail);
  }
  const decoded = decodeDelegationHeader(text);
  return decoded.ok ? pass(decoded.value) : decoded;
}
