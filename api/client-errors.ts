import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * Requests Node's HTTP parser refuses before Koa sees them (headers over the size limit, malformed
 * request lines) still get a JSON error body like every other error, instead of Node's empty default; so
 * does a CONNECT request, which Node would otherwise drop without an answer.
 */
export function answerClientErrorsWithJson(server: Server): void {
  // Without a listener Node drops a CONNECT request's connection unanswered; this server is no proxy.
  server.on('connect', (_request: unknown, socket: Duplex) => {
    const body = JSON.stringify({ error: 'method_not_allowed', detail: 'CONNECT is not served here' });
    socket.end(
      `HTTP/1.1 405 Method Not Allowed\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable || (error.code === 'ECONNRESET' && !socket.readable)) {
      socket.destroy();
      return;
    }
    const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
    const status = tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request';
    const body = JSON.stringify(
      tooLarge
        ? { error: 'headers_too_large', detail: 'request headers exceed the server limit (16 KiB)' }
        : { error: 'invalid_request', detail: 'malformed HTTP request' },
    );
    socket.end(
      `HTTP/1.1 ${status}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
}
