import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { answerClientErrorsWithJson } from './client-errors.js';
import type { HttpLimits } from './http-limits.js';

/** Node's default, stated: headers (request line included) beyond it get 431. */
export const MAX_HEADER_BYTES = 16 * 1024;

export const DEFAULT_RECEIVE_TIMEOUTS = { requestTimeoutMs: 30_000, headersTimeoutMs: 20_000 } as const;

/**
 * An HTTP server with this service's bounds on receiving a request: headers within `headersTimeoutMs`
 * (slowloris), checked every second rather than Node's 30 s default so the bound holds, and JSON answers for
 * what Node refuses itself. Request bodies are bounded where they are read (api/json-body.ts).
 */
export async function listenHttp(
  /** A Koa app's `callback()`: it answers every error itself. */
  handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  port: number,
  host: string,
  limits: Pick<HttpLimits, 'requestTimeoutMs' | 'headersTimeoutMs'> = DEFAULT_RECEIVE_TIMEOUTS,
): Promise<{ server: Server; port: number }> {
  const server = createServer(
    {
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout: Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs),
      connectionsCheckingInterval: 1000,
      maxHeaderSize: MAX_HEADER_BYTES,
    },
    (req, res) => void handler(req, res),
  );
  answerClientErrorsWithJson(server, handler);
  server.listen(port, host);
  await once(server, 'listening');
  return { server, port: (server.address() as AddressInfo).port };
}
