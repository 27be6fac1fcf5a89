import type { ServerResponse } from 'node:http';
import type { Context } from 'koa';
import type { ChatJob, Swarm } from '../../activities/inference/index.js';
import { InferenceAborted } from '../../activities/inference/runtime-client.js';
import { ServiceError } from '../../core/errors.js';
import { openAiError } from '../../core/openai-errors.js';
import { svcObject, usageObject } from './chat-response.js';

export interface StreamOptions {
  /** `svc.locations` was asked for. */
  withLocations: boolean;
  /** `stream_options.include_usage`: end with OpenAI's extra chunk (`choices: []`, `usage`). */
  includeUsage: boolean;
}

/**
 * `stream: true` as OpenAI streams it: `chat.completion.chunk` events, then `data: [DONE]`. The chunk with the
 * `finish_reason` is held until the answer is complete and carries the `svc` object. Only when
 * `stream_options.include_usage` asked for it does one more chunk follow, with `choices: []` and `usage` (and
 * `svc` there instead), as OpenAI sends it: clients that read `chunk.choices[0].delta` never see an empty one.
 *
 * Until the upstream accepted the request the failure is an ordinary JSON error with its status. After the
 * 200 is sent, a failure is one in-stream event in OpenAI's shape, `data: {"error": {"message", "type",
 * "param", "code"}}` (core/openai-errors.ts), and the stream ends without [DONE] (the openai client throws an
 * APIError on it). A client that disconnects aborts the upstream request; nothing more is written, and no
 * record is made. Resolves true when the whole answer was delivered.
 */
export async function streamChat(
  ctx: Context,
  swarm: Swarm,
  job: ChatJob,
  signal: AbortSignal,
  options: StreamOptions,
): Promise<boolean> {
  const { withLocations, includeUsage } = options;
  const open = await swarm.chatStream(job, signal);
  const res = ctx.res;
  ctx.respond = false; // Koa must not touch the response any more: it is ours to stream
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    // nginx and similar proxies buffer responses unless told not to; SSE must not be buffered.
    'x-accel-buffering': 'no',
  });
  const base = {
    id: `chatcmpl-${open.jobId}`,
    object: 'chat.completion.chunk',
    created: Math.floor(swarm.now() / 1000),
    model: open.model,
  };
  type Choice = { index: 0; delta: object; logprobs: null; finish_reason: string | null };
  let last: Choice | undefined;
  try {
    for (;;) {
      const step = await open.deltas.next();
      if (step.done) {
        const result = step.value;
        const svc = svcObject(result, withLocations);
        const final = last ?? { index: 0, delta: {}, logprobs: null, finish_reason: 'stop' };
        await send(res, { ...base, choices: [final], ...(includeUsage ? {} : { svc }) });
        if (includeUsage) await send(res, { ...base, choices: [], usage: usageObject(result), svc });
        res.end('data: [DONE]\n\n');
        return true;
      }
      const { delta, finish_reason } = step.value;
      if (last) await send(res, { ...base, choices: [last] });
      last = undefined;
      const choice: Choice = { index: 0, delta, logprobs: null, finish_reason };
      // The finishing chunk waits for the answer's end, which gives it the svc object.
      if (finish_reason === null) await send(res, { ...base, choices: [choice] });
      else last = choice;
    }
  } catch (error) {
    if (error instanceof InferenceAborted || signal.aborted || res.destroyed) {
      res.destroy();
      return false;
    }
    const failure =
      error instanceof ServiceError ? error : new ServiceError('internal_error', 'an internal error occurred');
    if (!(error instanceof ServiceError)) swarm.logger?.error({ err: error, job_id: job.jobId }, 'chat stream failed');
    res.end(`data: ${JSON.stringify(openAiError(failure).body)}\n\n`);
    return false;
  } finally {
    await open.deltas.return(undefined as never).catch(() => undefined);
  }
}

/** One SSE event; waits while the client's socket is full, and stops waiting when it closes. */
async function send(res: ServerResponse, data: unknown): Promise<void> {
  if (res.destroyed) throw new InferenceAborted('the client went away');
  if (res.write(`data: ${JSON.stringify(data)}\n\n`)) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
