import { pino, type Logger } from 'pino';
import { SERVICE_VERSION } from '../api/version.js';
import { loadPerceptionIdentity } from '../mcp/perception/identity.js';
import { createPerceptionServer, type PerceptionServer } from '../mcp/perception/server.js';
import { createClassifyTool } from '../mcp/perception/tools/classify.js';
import { createEmbedTool } from '../mcp/perception/tools/embed.js';
import { createFetchTileTool } from '../mcp/perception/tools/fetch-tile.js';
import { createWeatherTool } from '../mcp/perception/tools/weather.js';
import type { AuditStore } from '../store/audit-store.js';
import type { Config } from './config.js';
import { openStores } from './stores.js';

/**
 * Starts the perception and compliance MCP server on PERCEPTION_HOST:PERCEPTION_PORT with the configured
 * identity (IDN_AGENT_SK, IDN_DELEGATION_CERT, or the local development identity under DATA_DIR/perception)
 * and the audit store. An identity that does not verify throws before anything listens.
 */
export async function startPerception(
  config: Config,
  deps: { audit: AuditStore; logger: Logger },
): Promise<{ url: string; server: PerceptionServer }> {
  const { logger } = deps;
  const identity = loadPerceptionIdentity({
    dataDir: config.dataDir,
    agentSecretKey: config.perception.agentSecretKey,
    delegationCert: config.perception.delegationCert,
    nowMs: Date.now(),
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
  const userAgent = `geofabric/${SERVICE_VERSION}`;
  const server = createPerceptionServer({
    store: deps.audit,
    agent: identity.agent,
    chain: identity.chain,
    principalLocal: identity.principalLocal,
    allowedOrigins: config.perception.allowedOrigins,
    allowedHosts: config.perception.allowedHosts,
    logger,
    tools: [
      createWeatherTool({
        weatherUrl: config.perception.weatherUrl,
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
export async function runPerceptionCli(config: Config): Promise<void> {
  const logger = pino({ level: config.logLevel });
  const stores = await openStores(config);
  let started: { server: PerceptionServer };
  try {
    started = await startPerception(config, { audit: stores.audit, logger });
  } catch (error) {
    await stores.close();
    throw error;
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    setTimeout(() => process.exit(1), 10_000).unref();
    started.server
      .close()
      .then(() => stores.close())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error({ err: error }, 'closing failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}
