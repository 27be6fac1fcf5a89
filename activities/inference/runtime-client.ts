/**
 * The two upstreams of inference, both OpenAI-compatible: a worker's local runtime (Ollama at
 * http://host:11434/v1, llama.cpp server …) and the fast-inference backbone. Streams and probes go through the
 * official `openai` client; the whole (non-streaming) completion, the hot path of every chat completion, through
 * runtime-http.ts, which keeps the client's errors and parsing at a fraction of its cost. Never any retries: a
 * retry is the dispatcher's decision, never hidden here.
 *
 * Failures leave as ServiceErrors a client may see: a refused or broken connection or an upstream error
 * status → 502 runtime_unavailable / backbone_unavailable, no answer in time → 504 upstream_timeout. The
 * upstream's own error text is kept to its status and first 200 characters (it may echo the prompt).
 */
import OpenAI, { APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionCreateParamsStreaming,
} from 'openai/resources/chat/completions';
import { ServiceError } from '../../core/errors.js';
import { safeFetch, sameOriginOnly } from '../safe-fetch.js';
import { createJsonPoster } from './runtime-http.js';

export type Provider = 'worker' | 'backbone';

export interface RuntimeClientConfig {
  provider: Provider;
  baseURL: string;
  apiKey: string | undefined;
  /** Until the answer's headers (non-streaming: the whole answer); while streaming, between chunks. */
  timeoutMs: number;
}

/** The caller went away (client disconnect): not an upstream failure, nothing to report. */
export class InferenceAborted extends Error {
  override name = 'InferenceAborted';
}

export type CompletionParams = Omit<ChatCompletionCreateParamsNonStreaming, 'stream'>;

export interface RuntimeClient {
  readonly provider: Provider;
  complete(params: CompletionParams, signal?: AbortSignal): Promise<ChatCompletion>;
  /** Resolves once the upstream accepted the request (so its refusal is still an HTTP error); then chunks. */
  stream(params: CompletionParams, signal?: AbortSignal): Promise<AsyncIterable<ChatCompletionChunk>>;
  /** True when `GET /models` answers within the timeout (backbone reachability for /svc/status). */
  probe(timeoutMs: number): Promise<boolean>;
}

export function createRuntimeClient(config: RuntimeClientConfig): RuntimeClient {
  const client = new OpenAI({
    baseURL: config.baseURL,
    // Local runtimes need no key; the client insists on one, and a placeholder is what Ollama documents.
    apiKey: config.apiKey ?? 'none',
    organization: null,
    project: null,
    timeout: config.timeoutMs,
    maxRetries: 0,
    logLevel: 'off',
    // The key goes in every request: never let a redirect carry it to another origin.
    fetch: (url, init) => safeFetch(url as string | URL, init, sameOriginOnly(config.baseURL)),
  });
  // One keep-alive connection pool per upstream for whole completions (runtime-http.ts).
  const poster = createJsonPoster(config.baseURL, config.apiKey ?? 'none');
  const fail = (error: unknown) => upstreamError(error, config.provider, config.timeoutMs);

  return {
    provider: config.provider,
    async complete(params, signal) {
      // The deadline covers the whole answer, not only its headers: a runtime that stalls mid-body must not
      // hold the step for the HTTP library's 300 s.
      try {
        const completion = await poster.post(
          '/chat/completions',
          { ...params, stream: false },
          config.timeoutMs,
          signal,
        );
        // A 200 that is no chat completion (an HTML page, a proxy's JSON) is the runtime's failure, not ours.
        // Text (an HTML page) has no `choices` either.
        const choice = (completion as Partial<ChatCompletion> | null)?.choices?.[0];
        if (typeof choice?.message !== 'object' || choice.message === null) {
          throw new ServiceError(
            SERVICE_CODES[config.provider],
            `${NAMES[config.provider]} answered 200 without a chat completion`,
          );
        }
        return completion as ChatCompletion;
      } catch (error) {
        throw fail(error);
      }
    },
    async stream(params, signal) {
      const body: ChatCompletionCreateParamsStreaming = {
        ...params,
        stream: true,
        stream_options: { include_usage: true },
      };
      let upstream: AsyncIterable<ChatCompletionChunk> & { controller: AbortController };
      try {
        upstream = await client.chat.completions.create(body, signal ? { signal } : {});
      } catch (error) {
        throw fail(error);
      }
      return watchIdle(upstream, config.timeoutMs, fail, signal);
    },
    async probe(timeoutMs) {
      try {
        await client.models.list({ timeout: timeoutMs });
        return true;
      } catch {
        return false;
      }
    },
  };
}

/** Chunks of `upstream`, aborted as upstream_timeout when none arrives for `idleMs`. */
async function* watchIdle(
  upstream: AsyncIterable<ChatCompletionChunk> & { controller: AbortController },
  idleMs: number,
  fail: (error: unknown) => Error,
  signal: AbortSignal | undefined,
): AsyncGenerator<ChatCompletionChunk> {
  let idle = false;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      idle = true;
      upstream.controller.abort();
    }, idleMs);
  };
  arm();
  try {
    for await (const chunk of upstream) {
      arm();
      yield chunk;
    }
    // The client's stream ends quietly when aborted: say which abort it was.
    if (idle) throw new APIConnectionTimeoutError();
    if (signal?.aborted) throw new APIUserAbortError();
  } catch (error) {
    throw idle ? fail(new APIConnectionTimeoutError()) : fail(error);
  } finally {
    clearTimeout(timer);
    upstream.controller.abort(); // no-op after a complete stream; stops the upstream when our caller stops
  }
}

const SERVICE_CODES = { worker: 'runtime_unavailable', backbone: 'backbone_unavailable' } as const;
const NAMES = { worker: 'the worker runtime', backbone: 'the backbone' } as const;

/** An upstream failure as what the client sees. */
export function upstreamError(error: unknown, provider: Provider, timeoutMs: number): Error {
  if (error instanceof ServiceError || error instanceof InferenceAborted) return error;
  const name = NAMES[provider];
  if (error instanceof APIUserAbortError) return new InferenceAborted('the request was aborted');
  if (error instanceof APIConnectionTimeoutError) {
    return new ServiceError('upstream_timeout', `${name} did not answer within ${timeoutMs} ms`);
  }
  if (error instanceof APIError) {
    const status = error.status === undefined ? 'a broken connection' : `HTTP ${error.status}`;
    const message = typeof error.message === 'string' ? error.message.slice(0, 200) : '';
    return new ServiceError(SERVICE_CODES[provider], `${name} failed (${status}): ${message}`);
  }
  return new ServiceError(SERVICE_CODES[provider], `${name} failed: ${String(error).slice(0, 200)}`);
}
