/**
 * Startup failures a person can act on (docs/operations.md "Startup errors"): Temporal, MongoDB or the gateway
 * not reachable, a port taken. Each becomes one line naming the setting, its value, what went wrong and what
 * to do; the library's own error (tonic, the MongoDB driver, Node's listen) stays as the `cause`, printed only
 * with LOG_LEVEL=debug.
 */
import { GatewayError } from '../activities/swarm-client/gateway-client.js';
import type { Config } from './config.js';

export class StartupError extends Error {
  override name = 'StartupError';
}

/** The reason in a few words, from an error's message or code (and its cause's): never the library's text. */
export function connectReason(error: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    parts.push(e.message, String((e as { code?: unknown }).code ?? ''));
  }
  const text = parts.join(' ');
  if (/ECONNREFUSED|Connection refused|ConnectionRefused/i.test(text)) return 'connection refused';
  if (/ENOTFOUND|EAI_AGAIN|dns error|failed to lookup|Name or service not known/i.test(text)) {
    return 'host name not found';
  }
  if (/ETIMEDOUT|timed? ?out|deadline/i.test(text)) return 'timed out';
  if (/EHOSTUNREACH|ENETUNREACH|unreachable/i.test(text)) return 'host unreachable';
  if (/certificate|TLS|SSL/i.test(text)) return 'TLS handshake failed';
  if (/auth/i.test(text)) return 'authentication failed';
  return 'not reachable';
}

/** Connecting to Temporal (TEMPORAL_ADDRESS): any failure of `connect` becomes a StartupError. */
export async function connectingToTemporal<T>(
  address: string,
  role: 'gateway' | 'worker',
  connect: () => Promise<T>,
): Promise<T> {
  try {
    return await connect();
  } catch (error) {
    const instead =
      role === 'gateway' ? ', or set ORCHESTRATOR=embedded to run jobs in this process without Temporal' : '';
    throw new StartupError(
      `TEMPORAL_ADDRESS=${address}: cannot reach Temporal (${connectReason(error)}). Start Temporal there ` +
        `(deploy/compose.yaml; scripts/engines.sh for development) or set TEMPORAL_ADDRESS to its frontend${instead}.`,
      { cause: error },
    );
  }
}

/** A MongoDB URI without its credentials, for messages. */
export function redactUri(uri: string): string {
  return uri.replace(/\/\/[^@/]*@/, '//***@');
}

/** Connecting to MongoDB (MONGODB_URI). */
export async function connectingToMongo<T>(uri: string, connect: () => Promise<T>): Promise<T> {
  try {
    return await connect();
  } catch (error) {
    throw new StartupError(
      `MONGODB_URI=${redactUri(uri)}: cannot reach MongoDB (${connectReason(error)}). Start MongoDB there ` +
        '(deploy/compose.yaml), correct MONGODB_URI, or unset it to use the embedded SQLite store under DATA_DIR.',
      { cause: error },
    );
  }
}

/** A worker's first registration with GATEWAY_URL failed for good (after its retries, or refused). */
export function gatewayRegistrationError(gatewayUrl: string, waitedMs: number, error: unknown): Error {
  if (!(error instanceof GatewayError)) return error as Error;
  if (error.status === 0) {
    return new StartupError(
      `GATEWAY_URL=${gatewayUrl}: no gateway answered for ${Math.round(waitedMs / 1000)} s ` +
        `(${connectReason(new Error(error.detail ?? ''))}). Start the gateway (\`geofabric start\`) or set ` +
        'GATEWAY_URL to its address.',
      { cause: error },
    );
  }
  if (error.status >= 500) {
    return new StartupError(
      `GATEWAY_URL=${gatewayUrl}: the gateway kept failing (HTTP ${error.status} ${error.code}) for ` +
        `${Math.round(waitedMs / 1000)} s; see the gateway's log.`,
      { cause: error },
    );
  }
  return new StartupError(
    `GATEWAY_URL=${gatewayUrl}: the gateway refused this worker's registration (HTTP ${error.status} ` +
      `${error.code}${error.detail ? `: ${error.detail}` : ''}).`,
    { cause: error },
  );
}

/** The listening ports of a configuration, by the setting that sets each. */
export interface PortSettings {
  PORT?: number;
  PERCEPTION_PORT?: number;
  GOVERNANCE_PORT?: number;
}

export function portsOf(config: Config): PortSettings {
  return { PORT: config.port, PERCEPTION_PORT: config.perception.port, GOVERNANCE_PORT: config.governance.port };
}

/** A failed `listen` (EADDRINUSE, EACCES), named by its setting; null for any other error. */
export function listenError(error: unknown, ports: PortSettings): StartupError | null {
  const e = error as { code?: unknown; syscall?: unknown; port?: unknown; address?: unknown };
  if (!(error instanceof Error) || e.syscall !== 'listen' || typeof e.port !== 'number') return null;
  const setting = (Object.keys(ports) as (keyof PortSettings)[]).find((k) => ports[k] === e.port) ?? 'the port';
  const where = `${typeof e.address === 'string' ? e.address : ''}:${e.port}`;
  if (e.code === 'EADDRINUSE') {
    return new StartupError(
      `${setting}=${e.port}: ${where} is already in use (another geofabric, or another service). Stop that ` +
        `process or set ${setting} to a free port.`,
      { cause: error },
    );
  }
  if (e.code === 'EACCES') {
    return new StartupError(
      `${setting}=${e.port}: not allowed to listen on ${where} (ports below 1024 need privileges). Set ` +
        `${setting} to a port above 1023.`,
      { cause: error },
    );
  }
  if (e.code === 'EADDRNOTAVAIL') {
    return new StartupError(
      `${setting}=${e.port}: ${where} is not an address of this machine. Check the HOST setting of that server.`,
      { cause: error },
    );
  }
  return null;
}

/**
 * The text to print for a failed start: the StartupError's line, or a listen error's explanation; with
 * `debug`, the cause's stack follows. Null when the error is none of these (the caller prints it as before).
 */
export function describeStartupError(error: unknown, ports: PortSettings, debug: boolean): string | null {
  const known = error instanceof StartupError ? error : listenError(error, ports);
  if (!known) return null;
  const cause = known.cause instanceof Error ? (known.cause.stack ?? known.cause.message) : undefined;
  return debug && cause ? `${known.message}\n${cause}` : known.message;
}
