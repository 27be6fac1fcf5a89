import assert from 'node:assert/strict';
import { connect } from 'node:net';

/** What a raw HTTP exchange got back: the bytes the server sent, and how long until it closed the connection. */
interface RawExchange {
  response: string;
  closedAfterMs: number;
}

/**
 * Writes `head` on a raw socket, then `drip` every `everyMs` (a slowloris client), until the server closes
 * the connection or `giveUpMs` passes (then the exchange resolves with what arrived, closedAfterMs Infinity).
 */
function slowRequest(
  url: string,
  options: { head: string; drip: string; everyMs: number; giveUpMs: number },
): Promise<RawExchange> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const started = Date.now();
    let response = '';
    const socket = connect(Number(port), hostname, () => socket.write(options.head));
    const dripping = setInterval(() => {
      if (socket.writable) socket.write(options.drip);
    }, options.everyMs);
    const giveUp = setTimeout(() => {
      clearInterval(dripping);
      socket.destroy();
      resolve({ response, closedAfterMs: Infinity });
    }, options.giveUpMs);
    socket.on('data', (chunk: Buffer) => (response += chunk.toString('utf8')));
    socket.on('error', () => undefined); // a reset after the answer is still an answer
    socket.on('close', () => {
      clearInterval(dripping);
      clearTimeout(giveUp);
      resolve({ response, closedAfterMs: Date.now() - started });
    });
  });
}

/** The status code and JSON body of a raw HTTP/1.1 response (the first one on the connection). */
function parseRawResponse(response: string): { status: number; body: unknown } {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1] ?? NaN);
  const text = response.slice(response.indexOf('\r\n\r\n') + 4);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status, body };
}

/**
 * A slowloris client against a server whose receive timeouts are about 1 s: it must be answered 408
 * `request_timeout` as JSON and cut off well before the client would give up.
 */
export async function assertSlowClientCut(url: string, head: string, drip: string): Promise<void> {
  const exchange = await slowRequest(url, { head, drip, everyMs: 100, giveUpMs: 8000 });
  const { status, body } = parseRawResponse(exchange.response);
  assert.equal(status, 408, exchange.response);
  assert.equal((body as { error?: string }).error, 'request_timeout', exchange.response);
  assert.ok(exchange.closedAfterMs < 4000, `closed after ${exchange.closedAfterMs} ms`);
}
