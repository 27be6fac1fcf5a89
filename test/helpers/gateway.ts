import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { createApp } from '../../api/app.js';
import { answerClientErrorsWithJson } from '../../api/client-errors.js';
import type { AppDeps, GatewayConfig } from '../../api/app-deps.js';
import { DEFAULT_EPOCH_GENESIS_MS } from '../../core/epoch.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { createSqliteRateLimitStore } from '../../store/sqlite/rate-limit-store.js';
import type { ProofStore } from '../../store/proof-store.js';

export interface TestResponse {
  status: number;
  headers: Headers;
  body: unknown;
  text: string;
}

export interface TestGateway {
  url: string;
  request(
    method: string,
    path: string,
    options?: { body?: unknown; raw?: string; headers?: Record<string, string> },
  ): Promise<TestResponse>;
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<TestResponse>;
  get(path: string, headers?: Record<string, string>): Promise<TestResponse>;
  close(): Promise<void>;
}

/** A gateway on an ephemeral loopback port with an in-memory store; the clock can be overridden. */
export async function startGateway(
  options: {
    config?: Partial<GatewayConfig>;
    clock?: () => number;
    rateLimits?: AppDeps['rateLimits'];
    proofs?: ProofStore;
  } = {},
): Promise<TestGateway & { proofs: ProofStore }> {
  const db = openSqlite(':memory:');
  const proofs = options.proofs ?? createSqliteProofStore(db);
  const app = createApp({
    config: {
      requireDelegation: false,
      bodyLimitBytes: 1024 * 1024,
      epochGenesisMs: DEFAULT_EPOCH_GENESIS_MS,
      apiKeys: [],
      ...options.config,
    },
    clock: options.clock ?? Date.now,
    logger: pino({ level: 'silent' }),
    rateLimits: options.rateLimits ?? createSqliteRateLimitStore(db),
    proofs,
  });
  const server: Server = app.listen(0, '127.0.0.1');
  answerClientErrorsWithJson(server);
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const request: TestGateway['request'] = async (method, path, { body, raw, headers = {} } = {}) => {
    const payload = raw ?? (body === undefined ? undefined : JSON.stringify(body));
    const res = await fetch(url + path, {
      method,
      headers: payload === undefined ? headers : { 'content-type': 'application/json', ...headers },
      ...(payload === undefined ? {} : { body: payload }),
    });
    const text = await res.text();
    let parsed: unknown = undefined;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: the assertion on `text` or `body` will say so
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  };

  return {
    url,
    proofs,
    request,
    post: (path, body, headers) => request('POST', path, { body, ...(headers ? { headers } : {}) }),
    get: (path, headers) => request('GET', path, headers ? { headers } : {}),
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
      db.close();
    },
  };
}
