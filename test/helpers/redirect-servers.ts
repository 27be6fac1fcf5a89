/**
 * Two local origins for redirect tests: a `recorder` that logs every request it gets (path and headers) and
 * answers 200, and a `redirector` whose `route` decides, per path, to redirect (status + Location) or answer.
 */
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
}

export interface LocalOrigin {
  url: string;
  seen: SeenRequest[];
  close(): Promise<void>;
}

export type Route = (path: string, req: IncomingMessage, res: ServerResponse) => void;

export async function startOrigin(route: Route = (_p, _q, res) => res.end('ok')): Promise<LocalOrigin> {
  const seen: SeenRequest[] = [];
  const server = createServer((req, res) => {
    seen.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers });
    req.resume();
    route(req.url ?? '', req, res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Answers `status` with `location` (and a body a client should never read). */
export function redirect(res: ServerResponse, status: number, location: string): void {
  res.writeHead(status, { location, 'content-type': 'text/plain' });
  res.end(`see ${location}`);
}
