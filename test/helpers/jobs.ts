import { issueCertificate, type DelegationCertificate } from '../../core/delegation-cert.js';
import { signRequestBody } from '../../core/gates/signature.js';
import { DEFAULT_JOB_CELL } from '../../core/h3-cell.js';
import type { KeyPair } from '../../core/identity.js';

/** A one-step inference job, the smallest thing a client signs. */
export const inferenceJob = (prompt: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  h3_cell: DEFAULT_JOB_CELL,
  steps: [{ id: 'ask', type: 'inference', messages: [{ role: 'user', content: prompt }] }],
  budget_credits: 0.1,
  ...extra,
});

export function signJob(key: KeyPair, body: Record<string, unknown>) {
  const signed = signRequestBody(key.secretKey, body);
  return {
    body: signed.body as unknown as Record<string, unknown> & { steps: Array<Record<string, unknown>> },
    headers: { 'x-idn-signature': signed.signature },
  };
}

const HOUR = 3_600_000;

/** A certificate from `principal` to `agent`, valid for a day around `now`, over the Rome resolution-5 cell. */
export function certFor(
  principal: KeyPair,
  agentPk: string,
  overrides: Partial<Parameters<typeof issueCertificate>[1]> = {},
  now = Date.now(),
): DelegationCertificate {
  return issueCertificate(principal.secretKey, {
    agent_pk: agentPk,
    h3_cells: ['851e8053fffffff'],
    facets: ['inference', 'tile_render', 'image_process'],
    not_before: new Date(now - HOUR).toISOString(),
    not_after: new Date(now + 24 * HOUR).toISOString(),
    max_depth: 0,
    constraints: null,
    ...overrides,
  });
}

export const certHeader = (chain: DelegationCertificate | DelegationCertificate[]): string =>
  Buffer.from(JSON.stringify(chain)).toString('base64');
