import { ServerResponse, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

const raw = (status: string, body: object) => {
  const text = JSON.stringify(body);
  return `HTTP/1.1 ${status}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`;
};

/**
 * Requests Node's HTTP parser refuses before Koa sees them (headers over the size limit, headers arriving too
 * slowly, malformed request lines) still get a JSON error body like every other error, instead of Node's
 * empty default; so does a CONNECT request, which Node would otherwise drop without an answer.
 */
export function answerClientErrorsWithJson(
  server: Server,
  handler?: (req: IncomingMessage, res: ServerResponse) => unknown,
): void {
  // This server speaks no other protocol (no WebSocket, no h2c). Node hands a request that asks for an upgrade to
  // this listener at the end of its headers; without one it serves it, but never parses a malformed chunked body
  // and leaves the client hanging. A request without a body is served as plain HTTP/1.1 (RFC 9110 §7.8 lets a
  // server ignore Upgrade), one with a body is refused: its bytes are no longer parsed as HTTP.
  server.on('upgrade', (request: IncomingMessage, socket: Duplex) => {
    const length = request.headers['content-length'];
    const hasBody = request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
    if (hasBody || !handler) {
      socket.end(
        raw('400 Bad Request', {
          error: 'invalid_request',
          detail: 'protocol upgrades are not supported: send the request without the Upgrade header',
        }),
      );
      return;
    }
    const response = new ServerResponse(request);
    response.shouldKeepAlive = false;
    response.assignSocket(socket as Socket);
    response.on('finish', () => {
      response.detachSocket(socket as Socket);
      socket.end();
    });
    void handler(request, response);
  });
  // Without a listener Node drops a CONNECT request's connection unanswered; this server is no proxy.
  server.on('connect', (_request: unknown, socket: Duplex) => {
    socket.end(raw('405 Method Not Allowed', { error: 'method_not_allowed', detail: 'CONNECT is not served here' }));
  });
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable || (error.code === 'ECONNRESET' && !socket.readable)) {
      socket.destroy();
      return;
    }
    // The request timed out while its handler was still reading it: answer through the handler's response
    // (unless it began one), then close.
    const response = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (response) {
      if (!response.headersSent) {
        const body = JSON.stringify({ error: 'request_timeout', detail: 'the request did not arrive in time' });
        response.writeHead(408, {
          'content-type': 'application/json; charset=utf-8',
          'content-length': Buffer.byteLength(body),
          connection: 'close',
        });
        response.end(body);
      } else socket.end();
      return;
    }
    if (error.code === 'HPE_HEADER_OVERFLOW') {
      socket.end(
        raw('431 Request Header Fields Too Large', {
          error: 'headers_too_large',
          detail: 'request headers exceed the server limit (16 KiB)',
        }),
      );
    } else if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      socket.end(
        raw('408 Request Timeout', { error: 'request_timeout', detail: 'the request headers did not arrive in time' }),
      );
    } else {
      socket.end(raw('400 Bad Request', { error: 'invalid_request', detail: 'malformed HTTP request' }));
    }
  });
}
