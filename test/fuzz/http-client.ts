/**
 * A fuzzing HTTP client: node:http without a pool (one connection per request, so a broken connection
 * never leaks into the next case), bytes exactly as given, a hard deadline per request (a hang fails the
 * case), and a raw-socket variant for requests Node's client refuses to write (bad request lines, bad
 * header bytes, conflicting framing). `assertCleanAnswer` is the one verdict every fuzz case gets.
 */
import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { ERROR_STATUS } from '../../core/errors.js';
import { openAiError } from '../../core/openai-errors.js';
import { isOpenEoAnswer } from '../../core/openeo/errors.js';

export interface FuzzResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  ms: number;
}

export interface FuzzRequest {
  method: string;
  /** Already encoded as it goes on the request line. */
  path: string;
  headers?: Record<string, string | string[]>;
  body?: Buffer | string;
}

/** Longest a fuzz case may take before it counts as a hang. */
export const REQUEST_DEADLINE_MS = 10_000;

/** Sends one request; rejects only when no complete answer arrives (refused, reset, or past the deadline). */
export function send(baseUrl: string, req: FuzzRequest, deadlineMs = REQUEST_DEADLINE_MS): Promise<FuzzResponse> {
  const url = new URL(baseUrl);
  const body = req.body === undefined ? undefined : Buffer.isBuffer(req.body) ? req.body : Buffer.from(req.body);
  const headers: Record<string, string | string[]> = { connection: 'close', ...req.headers };
  if (body !== undefined && !Object.keys(headers).some((h) => /^(content-length|transfer-encoding)$/i.test(h))) {
    headers['content-length'] = String(body.length);
  }
  const started = performance.now();
  return new Promise((resolve, reject) => {
    let answered: FuzzResponse | undefined;
    const client = httpRequest(
      { host: url.hostname, port: url.port, method: req.method, path: req.path, headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          answered = {
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString('utf8'),
            ms: performance.now() - started,
          };
          clearTimeout(timer);
          resolve(answered);
        });
        res.on('error', (error) => {
          if (answered === undefined) reject(error);
        });
      },
    );
    const timer = setTimeout(() => {
      client.destroy(new Error(`no answer to ${req.method} ${req.path.slice(0, 120)} within ${deadlineMs} ms (hang)`));
    }, deadlineMs);
    // The server may answer (413, 431) and close before the whole body is written: the answer is what counts.
    client.on('error', (error) => {
      if (answered !== undefined) return;
      clearTimeout(timer);
      reject(error);
    });
    client.end(body);
  });
}

/**
 * Writes `bytes` to a fresh connection and reads until the server closes it or the deadline passes, then
 * parses one HTTP/1.1 response (status line, headers, content-length body).
 */
export function sendRaw(baseUrl: string, bytes: Buffer, deadlineMs = REQUEST_DEADLINE_MS): Promise<FuzzResponse> {
  const url = new URL(baseUrl);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer within ${deadlineMs} ms (hang)`));
    }, deadlineMs);
    const finish = () => {
      clearTimeout(timer);
      // Interim answers (100 Continue) precede the one that counts.
      const raw = Buffer.concat(chunks)
        .toString('latin1')
        .replace(/^(?:HTTP\/1\.[01] 1\d\d[^\r]*\r\n(?:[^\r]+\r\n)*\r\n)+/, '');
      const head = raw.indexOf('\r\n\r\n');
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(raw);
      if (head < 0 || !match) {
        reject(new Error(`not an HTTP response: ${JSON.stringify(raw.slice(0, 200))}`));
        return;
      }
      const headers: IncomingHttpHeaders = {};
      for (const line of raw.slice(0, head).split('\r\n').slice(1)) {
        const colon = line.indexOf(':');
        if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const length = Number(headers['content-length'] ?? NaN);
      const rest = Buffer.from(raw.slice(head + 4), 'latin1');
      const text = (Number.isFinite(length) ? rest.subarray(0, length) : rest).toString('utf8');
      resolve({ status: Number(match[1]), headers, text, ms: performance.now() - started });
    };
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      // One response is all a fuzz case needs: stop at the end of its declared body.
      const raw = Buffer.concat(chunks)
        .toString('latin1')
        .replace(/^(?:HTTP\/1\.[01] 1\d\d[^\r]*\r\n(?:[^\r]+\r\n)*\r\n)+/, '');
      const head = raw.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: *(\d+)/i.exec(raw.slice(0, Math.max(0, head)))?.[1];
      if (head >= 0 && length !== undefined && Buffer.byteLength(raw.slice(head + 4), 'latin1') >= Number(length)) {
        socket.destroy();
        finish();
      }
    });
    socket.on('end', finish);
    socket.on('error', (error) => {
      if (chunks.length > 0) finish();
      else {
        clearTimeout(timer);
        reject(error);
      }
    });
    socket.write(bytes);
  });
}

/** Text that only an unhandled error would put in a body: a stack frame, a source path, a JS engine message. */
const LEAK =
  /\n\s+at\s|\(\/[^)]*:\d+:\d+\)|node:internal|node_modules|\/work\/|\b(?:TypeError|ReferenceError|RangeError)\b|Cannot read propert|is not a function|Maximum call stack/;

export interface AnswerRules {
  /** Answers a route may legitimately give with a 5xx status (e.g. docs/protocol.md §7's epoch-roll message). */
  allow5xx?: (res: FuzzResponse) => boolean;
  /** Bodies besides `{ error: code }` a 4xx may carry (e.g. JSON-RPC errors from the MCP transport). */
  otherErrorBody?: (body: unknown, res: FuzzResponse) => boolean;
}

/**
 * The verdict on one fuzzed answer: below 500, an error is JSON `{ error: code }` with a code of
 * core/errors.ts whose table status is the answer's status, and no answer leaks a stack or an engine message.
 */
export function assertCleanAnswer(res: FuzzResponse, context: string, rules: AnswerRules = {}): void {
  const where = `${context} → ${res.status} ${res.text.slice(0, 300)}`;
  assert.doesNotMatch(res.text, LEAK, `leaks internals: ${where}`);
  if (res.status >= 500 && rules.allow5xx?.(res) === true) return;
  assert.ok(res.status >= 100 && res.status < 500, `5xx for client input: ${where}`);
  if (res.status < 400) return;
  assert.match(String(res.headers['content-type'] ?? ''), /^application\/json/, `error without a JSON body: ${where}`);
  let body: unknown;
  try {
    body = JSON.parse(res.text);
  } catch {
    assert.fail(`error body is not JSON: ${where}`);
  }
  if (rules.otherErrorBody?.(body, res) === true) return;
  if (isOpenEoBody(body)) return assertOpenEoError(body, res.status, where);
  const code = (body as { error?: unknown } | null)?.error;
  if ((body as { jsonrpc?: unknown } | null)?.jsonrpc === '2.0') return assertJsonRpcRefusal(code, res.status, where);
  if (typeof code === 'object' && code !== null) return assertOpenAiError(code, res.status, where);
  assert.equal(typeof code, 'string', `error body without a string error: ${where}`);
  assert.ok(Object.hasOwn(ERROR_STATUS, code as string), `error code not in core/errors.ts: ${where}`);
  assert.equal(res.status, ERROR_STATUS[code as keyof typeof ERROR_STATUS], `status is not the table's: ${where}`);
}

/**
 * A JSON-RPC refusal of an MCP route (mcp/shared/mcp-http-app.ts: 401/403 before the MCP layer): a numeric
 * code, a message, and the table code with this status as `data.reason`.
 */
function assertJsonRpcRefusal(error: unknown, status: number, where: string): void {
  const e = error as { code?: unknown; message?: unknown; data?: { reason?: unknown } } | undefined;
  assert.equal(typeof e?.code, 'number', `JSON-RPC error without a code: ${where}`);
  assert.equal(typeof e?.message, 'string', `JSON-RPC error without a message: ${where}`);
  const reason = e?.data?.reason;
  assert.ok(
    typeof reason === 'string' && Object.hasOwn(ERROR_STATUS, reason),
    `reason not in core/errors.ts: ${where}`,
  );
  assert.equal(status, ERROR_STATUS[reason as keyof typeof ERROR_STATUS], `status is not the table's: ${where}`);
}

/**
 * An OpenAI-style error (the OpenAI-compatible routes): message and type are strings, and the code is what
 * core/openai-errors.ts makes of a table code with this status.
 */
function assertOpenAiError(error: object, status: number, where: string): void {
  const e = error as { message?: unknown; type?: unknown; param?: unknown; code?: unknown };
  assert.equal(typeof e.message, 'string', `OpenAI error without a message: ${where}`);
  assert.equal(typeof e.type, 'string', `OpenAI error without a type: ${where}`);
  assert.ok(e.param === null || typeof e.param === 'string', `OpenAI error param: ${where}`);
  const known = (Object.keys(ERROR_STATUS) as (keyof typeof ERROR_STATUS)[]).some((ours) => {
    const mapped = openAiError({ code: ours, status: ERROR_STATUS[ours] });
    return mapped.body.error.code === e.code && mapped.status === status;
  });
  assert.ok(known, `OpenAI error code not from core/errors.ts at its status: ${where}`);
}

/** An openEO error body (the openEO routes, core/openeo/errors.ts): `{ id, code, message, links }`. */
const isOpenEoBody = (body: unknown): body is { id: unknown; code: unknown; message: unknown; links: unknown } =>
  typeof body === 'object' && body !== null && 'code' in body && 'links' in body && !('error' in body);

/** An openEO error: an id, a message, links, and a code openEO's error writer gives at this status. */
function assertOpenEoError(
  body: { id: unknown; code: unknown; message: unknown; links: unknown },
  status: number,
  where: string,
): void {
  assert.equal(typeof body.id, 'string', `openEO error without an id: ${where}`);
  assert.equal(typeof body.message, 'string', `openEO error without a message: ${where}`);
  assert.ok(Array.isArray(body.links), `openEO error without links: ${where}`);
  assert.ok(
    typeof body.code === 'string' && isOpenEoAnswer(body.code, status),
    `openEO error code not openEO's or core/errors.ts's at its status: ${where}`,
  );
}

/** Names Object.prototype (and friends) own now: compared after every case to catch pollution. */
export function prototypeSnapshot(): string {
  return [Object.prototype, Array.prototype, Function.prototype, String.prototype]
    .map((proto) => Reflect.ownKeys(proto).map(String).sort().join(','))
    .join('|');
}
