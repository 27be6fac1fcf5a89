/**
 * One JSON POST to an OpenAI-compatible upstream, for the non-streaming completion: the hot path of every chat
 * completion. The `openai` client's fetch, web streams, header objects and logging made that call about
 * 0.5 ms slower than the upstream's own answer (docs/benchmarks.md, chat); this is node:http(s) over a
 * keep-alive agent per upstream, so consecutive requests reuse one connection, as fetch's pool did.
 *
 * It keeps the client's contract: failures are the `openai` error classes with the messages the client gives
 * them (so upstreamError maps them as before), the body is parsed as the client parses it, and redirects follow
 * activities/safe-fetch.ts's rules (same origin only, at most DEFAULT_MAX_REDIRECTS, 303 and a POST's 301/302
 * continue as a GET without the body).
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { urlToHttpOptions } from 'node:url';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { VERSION } from 'openai/version';
import { DEFAULT_MAX_REDIRECTS, originOf, UpstreamRefused } from '../safe-fetch.js';

/** An idle kept-alive connection is closed after this long (undici's default, which fetch used before). */
export const IDLE_SOCKET_MS = 4000;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export interface JsonPoster {
  /**
   * POSTs `body` to `path` under the base URL; the parsed answer of a 2xx (as the `openai` client parses it:
   * JSON by content type, else text; null for a 204). Throws APIError (an error status), APIConnectionError,
   * APIConnectionTimeoutError (no whole answer within `timeoutMs`), APIUserAbortError (`signal`).
   */
  post(path: string, body: unknown, timeoutMs: number, signal?: AbortSignal): Promise<unknown>;
}

interface Answer {
  status: number;
  /** As received (res.rawHeaders): node builds `res.headers` on first use, a cost on every call. */
  rawHeaders: string[];
  text: string;
}

export function createJsonPoster(baseURL: string, apiKey: string): JsonPoster {
  const origin = originOf(baseURL);
  const agentOptions = { keepAlive: true, timeout: IDLE_SOCKET_MS };
  const agents = { 'http:': new HttpAgent(agentOptions), 'https:': new HttpsAgent(agentOptions) };
  const accept = [
    'accept',
    'application/json',
    'user-agent',
    `OpenAI/JS ${VERSION}`,
    'authorization',
    `Bearer ${apiKey}`,
  ];
  const targetOf = (url: URL): RequestOptions => ({ ...urlToHttpOptions(url), agent: agents[url.protocol as 'http:'] });
  // By path (the one or two this poster is given), built once: node:http's URL handling is a measurable share.
  const firstHops = new Map<string, { url: URL; target: RequestOptions }>();
  const firstHopOf = (path: string) => {
    let hop = firstHops.get(path);
    if (!hop) {
      const url = new URL(baseURL + (baseURL.endsWith('/') && path.startsWith('/') ? path.slice(1) : path));
      hop = { url, target: targetOf(url) };
      firstHops.set(path, hop);
    }
    return hop;
  };
  // Raw header arrays skip node:http's per-header bookkeeping; with one, Host is ours to send.
  const requestHeaders = (url: URL, body: Buffer | null): string[] =>
    body === null
      ? ['host', url.host, ...accept]
      : ['host', url.host, ...accept, 'content-type', 'application/json', 'content-length', String(body.length)];

  function send(
    first: { url: URL; target: RequestOptions },
    payload: Buffer,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<Answer> {
    return new Promise<Answer>((resolve, reject) => {
      let current: ReturnType<typeof httpRequest> | undefined;
      let settled = false;
      const settle = (error: unknown, answer?: Answer) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (answer) resolve(answer);
        else reject(error instanceof Error ? error : new Error(String(error)));
      };
      const stop = (error: Error) => {
        settle(error);
        current?.destroy();
      };
      const onAbort = () => stop(new APIUserAbortError());
      const timer = setTimeout(() => stop(new APIConnectionTimeoutError()), timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });

      const hop = (url: URL, target: RequestOptions, method: string, body: Buffer | null, hops: number) => {
        // The client saw a refused fetch as a connection error with its default message.
        if (originOf(url) !== origin)
          return settle(new APIConnectionError({ cause: new UpstreamRefused('origin', url.href) }));
        const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
        const options = { ...target, method, headers: requestHeaders(url, body) };
        const req = request(options, (res) => {
          const status = res.statusCode ?? 0;
          const location = header(res.rawHeaders, 'location');
          if (REDIRECTS.has(status) && location !== undefined) {
            res.resume(); // drained, so the connection is reused
            if (hops >= DEFAULT_MAX_REDIRECTS) {
              return settle(new APIConnectionError({ cause: new UpstreamRefused('redirects', url.href) }));
            }
            let next: URL;
            try {
              next = new URL(location, url);
            } catch {
              return settle(new APIConnectionError({ cause: new UpstreamRefused('origin', location.slice(0, 200)) }));
            }
            const asGet = status === 303 || ((status === 301 || status === 302) && method === 'POST');
            return hop(next, targetOf(next), asGet ? 'GET' : method, asGet ? null : body, hops + 1);
          }
          readAll(res, (error, text) =>
            error ? settle(error) : settle(null, { status, rawHeaders: res.rawHeaders, text }),
          );
        });
        current = req;
        req.on('error', (error) => settle(connectionError(error)));
        req.end(body ?? undefined);
      };
      hop(first.url, first.target, 'POST', payload, 0);
    });
  }

  return {
    async post(path, body, timeoutMs, signal) {
      if (signal?.aborted) throw new APIUserAbortError();
      const answer = await send(firstHopOf(path), Buffer.from(JSON.stringify(body)), timeoutMs, signal);
      if (answer.status < 200 || answer.status > 299) {
        const json = safeJson(answer.text) as object | undefined;
        throw APIError.generate(answer.status, json, json ? undefined : answer.text, headersOf(answer));
      }
      if (answer.status === 204) return null;
      const mediaType = header(answer.rawHeaders, 'content-type')?.split(';')[0]?.trim();
      if (mediaType?.includes('application/json') || mediaType?.endsWith('+json')) {
        if (header(answer.rawHeaders, 'content-length') === '0') return undefined;
        return JSON.parse(answer.text);
      }
      return answer.text;
    },
  };
}

/** The body as text (UTF-8, a BOM dropped as fetch does); a connection cut mid-body is fetch's `terminated`. */
function readAll(res: IncomingMessage, done: (error: Error | null, text: string) => void): void {
  const chunks: Buffer[] = [];
  res.on('data', (chunk: Buffer) => chunks.push(chunk));
  res.on('end', () => {
    const text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8');
    done(null, text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  });
  res.on('close', () => {
    if (!res.complete) done(new TypeError('terminated'), '');
  });
  res.on('error', () => undefined); // reported by `close`
}

/** As the `openai` client classifies a failed fetch. */
function connectionError(error: Error): Error {
  const described = String(error) + ('cause' in error ? String(error.cause) : '');
  if (/timed? ?out/i.test(described)) return new APIConnectionTimeoutError();
  return new APIConnectionError({ cause: error });
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function headersOf(answer: Answer): Headers {
  const headers = new Headers();
  for (let i = 0; i + 1 < answer.rawHeaders.length; i += 2)
    headers.append(answer.rawHeaders[i]!, answer.rawHeaders[i + 1]!);
  return headers;
}

/** The first value of header `name` (lower case) in raw name/value pairs, as `res.headers` would give it. */
function header(raw: string[], name: string): string | undefined {
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const key = raw[i]!;
    if (key.length === name.length && key.toLowerCase() === name) return raw[i + 1];
  }
  return undefined;
}
