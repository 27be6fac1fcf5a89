import type { ServerResponse } from 'node:http';
import type { Context } from 'koa';
import type { ChatJob, Swarm } from '../../activities/inference/index.js';
import { InferenceAborted } from '../../activities/inference/runtime-client.js';
import { ServiceError } from '../../core/errors.js';
import { svcObject, usageObject } from './chat-response.js';

/**
 * `stream: true` as OpenAI streams it: `chat.completion.chunk` events, then one chunk with `choices: []`,
 * `usage` (always, whatever `stream_options` says) and `svc`, then `data: [DONE]`.
 *
 * Until the upstream accepted the request the failure is an ordinary JSON error with its status. After the
 * 200 is sent, a failure is one in-stream event in OpenAI's shape, `data: {"error": {"message", "type",
 * "code"}}`, and the stream ends without [DONE] (the openai client throws an APIError on it). A client that
 * disconnects aborts the upstream request; nothing more is written, and no record is made.
 */
export async function streamChat(
  ctx: Context,
  swarm: Swarm,
  job: ChatJob,
  signal: AbortSignal,
  withLocations: boolean,
): Promise<void> {
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
  try {
    for (;;) {
      const step = await open.deltas.next();
      if (step.done) {
        const result = step.value;
        await send(res, { ...base, choices: [], usage: usageObject(result), svc: svcObject(result, withLocations) });
        res.end('data: [DONE]\n\n');
        return;
      }
      const { delta, finish_reason } = step.value;
      await send(res, { ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason }] });
    }
  } catch (error) {
    if (error instanceof InferenceAborted || signal.aborted || res.destroyed) {
      res.destroy();
      return;
    }
    const failure =
      error instanceof ServiceError ? error : new ServiceError('internal_error', 'an internal error occurred');
    if (!(error instanceof ServiceError)) swarm.logger?.error({ err: error, job_id: job.jobId }, 'chat stream failed');
    const body = {
      error: { message: failure.detail ?? failure.code, type: failure.code, param: null, code: failure.code },
    };
    res.end(`data: ${JSON.stringify(body)}\n\n`);
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
