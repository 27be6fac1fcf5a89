import { issueCertificate, type DelegationCertificate } from '../../core/delegation-cert.js';
import { generateKeyPair } from '../../core/identity.js';
import { DEFAULT_ALLOWED_TOOLS } from '../../core/tool-preflight.js';

/**
 * A perception certificate from a fresh principal to `agentPk` for `cell`: every tool of docs/protocol.md §4.3,
 * valid through 2026, no effective rate limit (audit tests and the audit bench write long chains under it).
 */
export const allToolsCertificate = (agentPk: string, cell: string): DelegationCertificate =>
  issueCertificate(generateKeyPair().secretKey, {
    agent_pk: agentPk,
    h3_cells: [cell],
    facets: ['perception'],
    not_before: '2025-01-01T00:00:00.000Z',
    not_after: '2026-12-31T00:00:00.000Z',
    max_depth: 0,
    constraints: { allowed_tools: [...DEFAULT_ALLOWED_TOOLS], max_ops_per_hour: 1_000_000 },
  });
