// A light HTTP/1.1 load generator for benchmarks where the client shares the machine with the server: the
// same pre-built requests autocannon sends (same bytes: request line, Host, Connection: keep-alive, the given
// headers, Content-Length, body), over `connections` keep-alive sockets with one request in flight on each,
// reading only each answer's status line and Content-Length. It costs the client far less CPU than autocannon,
// so more of the cores are left to the server the figure is about.
import { connect, type Socket } from 'node:net';

export interface LoadRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

export interface LoadResult {
  /** Completed requests per second over the timed window. */
  perSecond: number;
  requests: number;
  statusCounts: Record<string, number>;
  p99Ms: number;
  /** Connection errors and answers this client cannot read (no Content-Length); 0 in a clean run. */
  errors: number;
}

/** The request as autocannon's request builder writes it (autocannon/lib/httpRequestBuilder.js). */
export function requestBytes(request: LoadRequest, host: string): Buffer {
  const body = Buffer.from(request.body);
  const head = [`${request.method} ${request.path} HTTP/1.1`, `Host: ${host}`, 'Connection: keep-alive'];
  for (const [name, value] of Object.entries(request.headers)) head.push(`${name}: ${value}`);
  if (body.length > 0) head.push(`Content-Length: ${body.length}`);
  return Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`), body]);
}

const HEADER_END = Buffer.from('\r\n\r\n');
const CONTENT_LENGTH = /\r\ncontent-length:[ \t]*(\d+)/i;

/**
 * Runs `seconds` of load against `url` (http://host:port). Every connection sends `requests` in order from the
 * first, as autocannon does, and starts the next request when the previous answer is complete.
 */
export async function keepAliveLoad(
  url: string,
  requests: readonly LoadRequest[],
  options: { connections: number; seconds: number },
): Promise<LoadResult> {
  const { hostname, port, host } = new URL(url);
  const wire = requests.map((request) => requestBytes(request, host));
  const statusCounts: Record<string, number> = {};
  const latencies: number[] = [];
  let errors = 0;
  let completed = 0;
  const started = performance.now();
  const deadline = started + options.seconds * 1000;

  const client = (): Promise<void> =>
    new Promise((resolve) => {
      let socket: Socket;
      let next = 0;
      let sentAt = 0;
      let pending: Buffer | null = null;
      const send = () => {
        if (performance.now() >= deadline) {
          socket.destroy();
          resolve();
          return;
        }
        sentAt = performance.now();
        socket.write(wire[next]!);
        next = (next + 1) % wire.length;
      };
      const open = () => {
        pending = null;
        socket = connect({ host: hostname, port: Number(port), noDelay: true }, send);
        socket.on('data', onData);
        socket.on('error', () => errors++);
        socket.on('close', () => {
          // A server that closes the connection (an error's `connection: close`): reconnect and go on.
          if (performance.now() < deadline) open();
          else resolve();
        });
      };
      const onData = (chunk: Buffer) => {
        const data: Buffer = pending === null ? chunk : Buffer.concat([pending, chunk]);
        const headEnd = data.indexOf(HEADER_END);
        if (headEnd < 0) {
          pending = data;
          return;
        }
        const head = data.toString('latin1', 0, headEnd);
        const length = CONTENT_LENGTH.exec(head)?.[1];
        if (length === undefined) {
          errors++;
          socket.destroy();
          return;
        }
        const total = headEnd + 4 + Number(length);
        if (data.length < total) {
          pending = data;
          return;
        }
        // One request in flight, so nothing follows the answer.
        pending = null;
        const status = head.slice(9, 12);
        statusCounts[status] = (statusCounts[status] ?? 0) + 1;
        latencies.push(performance.now() - sentAt);
        completed++;
        send();
      };
      open();
    });

  await Promise.all(Array.from({ length: options.connections }, client));
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    perSecond: completed / elapsed,
    requests: completed,
    statusCounts,
    p99Ms: Math.round((latencies[Math.floor(latencies.length * 0.99)] ?? 0) * 10) / 10,
    errors,
  };
}
