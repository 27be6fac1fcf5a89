import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { parseDelegationChain, type DelegationCertificate } from '../core/delegation-cert.js';
import type { KeyPair } from '../core/identity.js';
import { parseChainArgument } from '../mcp/governance/chain-book.js';
import { loadGovernanceKey } from '../mcp/governance/server-key.js';
import { createGovernanceServer, type GovernanceServer } from '../mcp/governance/server.js';
import { perceptionDir } from '../mcp/perception/identity.js';
import type { AuditStore } from '../store/audit-store.js';
import type { Config } from './config.js';
import { runAloneUntilSignal } from './run-alone.js';

/** A configured certificate that cannot be read; the message names the variable. */
export class GovernanceConfigError extends Error {
  override name = 'GovernanceConfigError';
}

/**
 * The governance server's default subject: IDN_DELEGATION_CERT (JSON or base64 of a certificate or chain),
 * else the chain the perception server provisioned under DATA_DIR/perception (its development certificate),
 * else none (cert_loaded: false; callers then pass agent_pk and delegation_chain). Shape is checked here;
 * authority (signature, validity) is what the tools answer, so an expired certificate still loads.
 */
export function resolveGovernanceChain(config: Config): { chain: DelegationCertificate[] | null; source: string } {
  const configured = config.governance.delegationCert;
  if (configured !== undefined && configured.trim() !== '') {
    const parsed = parseChainArgument(configured);
    if (!parsed.ok) throw new GovernanceConfigError(`IDN_DELEGATION_CERT: ${parsed.detail}`);
    return { chain: parsed.value, source: 'IDN_DELEGATION_CERT' };
  }
  const path = join(perceptionDir(config.dataDir), 'delegation-cert.json');
  if (existsSync(path)) {
    try {
      const parsed = parseDelegationChain(JSON.parse(readFileSync(path, 'utf8')));
      if (parsed.ok) return { chain: parsed.value, source: path };
    } catch {
      // An unreadable development certificate is no subject; perception re-issues it on its next start.
    }
  }
  return { chain: null, source: 'none' };
}

/**
 * Starts the governance tool server on GOVERNANCE_HOST:GOVERNANCE_PORT over the audit store (read only), with
 * its own key (GOVERNANCE_SK or DATA_DIR/governance/server-key.json). `chain` overrides the subject (the
 * chain the perception server beside it runs under).
 */
export async function startGovernance(
  config: Config,
  deps: {
    audit: AuditStore;
    logger: Logger;
    chain?: { chain: DelegationCertificate[] | null; source: string };
    /** loadGovernanceKey's result, when the caller needed the key first (start.ts: the token issuer key). */
    key?: { key: KeyPair; source: string };
  },
): Promise<{ url: string; server: GovernanceServer }> {
  const { logger } = deps;
  const { key, source: keySource } =
    deps.key ?? loadGovernanceKey({ dataDir: config.dataDir, secretKey: config.governance.secretKey });
  const subject = deps.chain ?? resolveGovernanceChain(config);
  logger.info(
    {
      server_pk: key.publicKey,
      server_key: keySource,
      certificate: subject.source,
      agent_pk: subject.chain?.[subject.chain.length - 1]?.agent_pk ?? null,
      compliance_url: config.governance.complianceUrl,
    },
    subject.chain === null
      ? 'governance identity: no delegation certificate loaded (set IDN_DELEGATION_CERT); tools need delegation_chain'
      : 'governance identity',
  );
  const server = createGovernanceServer({
    store: deps.audit,
    key,
    chain: subject.chain,
    complianceUrl: config.governance.complianceUrl,
    complianceTimeoutMs: config.governance.complianceTimeoutMs,
    allowedOrigins: config.governance.allowedOrigins,
    allowedHosts: config.governance.allowedHosts,
    limits: config.httpLimits,
    sessionLimits: config.mcpSessions,
    tokenTtlSeconds: config.governance.tokenTtlSeconds,
    trustedPrincipals: config.trustedPrincipals,
    toolPolicy: config.toolPolicy,
    logger,
  });
  const { url } = await server.listen(config.governance.port, config.governance.host);
  return { url, server };
}

/** `geofabric governance`: the governance tool server alone, until SIGINT/SIGTERM. */
export function runGovernanceCli(config: Config): Promise<void> {
  return runAloneUntilSignal(
    config,
    async (stores, logger) => (await startGovernance(config, { audit: stores.audit, logger })).server,
  );
}
