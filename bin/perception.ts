import type { Logger } from 'pino';
import { SERVICE_VERSION } from '../api/version.js';
import { loadGovernanceKey } from '../mcp/governance/server-key.js';
import { TOKEN_AUDIENCE, TOKEN_ISSUER } from '../mcp/governance/token.js';
import { loadPerceptionIdentity } from '../mcp/perception/identity.js';
import { createPerceptionServer, type PerceptionServer } from '../mcp/perception/server.js';
import { createClassifyTool } from '../mcp/perception/tools/classify.js';
import { createEmbedTool } from '../mcp/perception/tools/embed.js';
import { createFetchTileTool } from '../mcp/perception/tools/fetch-tile.js';
import { createWeatherTool } from '../mcp/perception/tools/weather.js';
import type { AuditStore } from '../store/audit-store.js';
import type { Config } from './config.js';
import { runAloneUntilSignal } from './run-alone.js';

/**
 * Starts the perception and compliance MCP server on PERCEPTION_HOST:PERCEPTION_PORT with the configured
 * identity (IDN_AGENT_SK, IDN_DELEGATION_CERT, or the local development identity under DATA_DIR/perception)
 * and the audit store. An identity that does not verify throws before anything listens.
 */
export async function startPerception(
  config: Config,
  deps: { audit: AuditStore; logger: Logger; tokenIssuerPk?: string | undefined },
): Promise<{ url: string; server: PerceptionServer }> {
  const { logger } = deps;
  const identity = loadPerceptionIdentity({
    dataDir: config.dataDir,
    agentSecretKey: config.perception.agentSecretKey,
    delegationCert: config.perception.delegationCert,
    nowMs: Date.now(),
    trustedPrincipals: config.trustedPrincipals,
  });
  logger.info(
    {
      agent_pk: identity.agent.publicKey,
      agent_key: identity.agentSource,
      certificate: identity.certificateSource,
      principal_pk: identity.chain[0]?.principal_pk,
      principal_local: identity.principalLocal,
      ...(identity.principalKeyPath ? { principal_key: identity.principalKeyPath } : {}),
      not_after: identity.certificate.not_after,
    },
    identity.principalLocal
      ? 'perception identity: local development principal and certificate (set IDN_DELEGATION_CERT for a real one)'
      : 'perception identity',
  );
  // Tokens of the governance server: its key as given (start.ts), else GOVERNANCE_PK.
  const tokenIssuerPk = deps.tokenIssuerPk ?? config.perception.tokenIssuerPk;
  if (config.perception.requireToken && tokenIssuerPk === undefined) {
    throw new Error('PERCEPTION_REQUIRE_TOKEN=true needs the token issuer: set GOVERNANCE_PK or GOVERNANCE_SK');
  }
  const userAgent = `geofabric/${SERVICE_VERSION}`;
  const server = createPerceptionServer({
    store: deps.audit,
    agent: identity.agent,
    chain: identity.chain,
    principalLocal: identity.principalLocal,
    allowedOrigins: config.perception.allowedOrigins,
    allowedHosts: config.perception.allowedHosts,
    limits: config.httpLimits,
    sessionLimits: config.mcpSessions,
    ...(tokenIssuerPk === undefined
      ? {}
      : { tokenVerifier: { issuerPk: tokenIssuerPk, issuer: TOKEN_ISSUER, audience: TOKEN_AUDIENCE } }),
    requireToken: config.perception.requireToken,
    testRoutes: config.perception.testRoutes,
    toolPolicy: config.toolPolicy,
    logger,
    tools: [
      createWeatherTool({
        weatherUrl: config.perception.weatherUrl,
        archiveUrl: config.perception.weatherArchiveUrl,
        timeoutMs: config.perception.weatherTimeoutMs,
        userAgent,
        clock: Date.now,
      }),
      createFetchTileTool({ stac: config.imagery }),
      createClassifyTool({
        classifyUrl: config.perception.classifyUrl,
        timeoutMs: config.perception.classifyTimeoutMs,
      }),
      createEmbedTool(),
    ],
  });
  const { url } = await server.listen(config.perception.port, config.perception.host);
  return { url, server };
}

/** `geofabric perception`: the perception server alone, until SIGINT/SIGTERM. */
export function runPerceptionCli(config: Config): Promise<void> {
  return runAloneUntilSignal(config, async (stores, logger) => {
    // Alone, it trusts the governance key of its data dir (or GOVERNANCE_SK) unless GOVERNANCE_PK names one.
    const tokenIssuerPk =
      config.perception.tokenIssuerPk ??
      loadGovernanceKey({ dataDir: config.dataDir, secretKey: config.governance.secretKey }).key.publicKey;
    return (await startPerception(config, { audit: stores.audit, logger, tokenIssuerPk })).server;
  });
}
