import type Router from '@koa/router';
import { ServiceError as TemporalServiceError } from '@temporalio/client';
import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import { ServiceError } from '../core/errors.js';
import { openAiError } from '../core/openai-errors.js';
import { openEoError } from '../core/openeo/errors.js';
import { isStorageFull, isStoreUnavailable } from '../store/store-errors.js';

/**
 * How a route's errors are written: `svc` is `{ error, detail? }`; `openai` is OpenAI's
 * `{ error: { message, type, param, code } }` (core/openai-errors.ts), for the OpenAI-compatible routes; `openeo`
 * is openEO's `{ id, code, message, links }` (core/openeo/errors.ts), for the openEO routes.
 */
export type ErrorStyle = 'svc' | 'openai' | 'openeo';

/**
 * Every failure leaves as JSON in the route's error style (`{ error, detail? }` with the table's status unless
 * `styleOf` says `openai`), and nothing internal (stack, message of an unexpected error) ever reaches the
 * client. Runs inside the request context (api/request-context.ts), which logs the request's line with the
 * code noted here.
 */
export function errorMiddleware(logger: Logger, styleOf: (ctx: Context) => ErrorStyle = () => 'svc'): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new ServiceError('not_found', `no route for ${ctx.method} ${ctx.path}`);
      }
    } catch (error) {
      const failure = asServiceError(error);
      if (failure.code === 'storage_full' || failure.code === 'store_unavailable') {
        // The operator's problem, not the client's: loud in the log, a plain 507 or 503 on the wire.
        const message = failure.code === 'storage_full' ? 'store is full' : 'store is unavailable';
        logger.error({ err: error, request_id: ctx.state.requestId as string | undefined }, message);
      } else if (!(error instanceof ServiceError)) {
        logger.error({ err: error, request_id: ctx.state.requestId as string | undefined }, 'unhandled error');
      }
      ctx.state.errorCode = failure.code;
      ctx.set(failure.headers);
      const style = styleOf(ctx);
      if (style === 'openai') {
        const { status, body } = openAiError(failure);
        ctx.status = status;
        ctx.body = body;
      } else if (style === 'openeo') {
        const { status, body } = openEoError(failure, (ctx.state.requestId as string | undefined) ?? 'unknown');
        ctx.status = status;
        ctx.body = body;
      } else {
        ctx.status = failure.status;
        ctx.body = failure.toBody();
      }
    }
  };
}

/**
 * A thrown value as the error the client sees. A full store (SQLITE_FULL: STORE_MAX_MB reached or the disk
 * full) is 507 `storage_full`: the write was refused whole, what was stored before is intact, reads go on. A
 * store out of reach (MongoDB down) is 503 `store_unavailable` with `retry-after`: nothing was half-written.
 * Anything else unknown is a 500 that says nothing internal.
 */
export function asServiceError(error: unknown): ServiceError {
  if (error instanceof ServiceError) return error;
  if (isStorageFull(error)) {
    return new ServiceError(
      'storage_full',
      'the store is full: the write was refused, and what was stored before is intact',
    );
  }
  if (isStoreUnavailable(error) || isTemporalUnavailable(error)) {
    return new ServiceError('store_unavailable', 'the store cannot be reached right now; retry shortly', {
      'retry-after': '5',
    });
  }
  return new ServiceError('internal_error', 'an internal error occurred');
}

/**
 * Temporal out of reach (its frontend down or restarting: gRPC UNAVAILABLE, no connection at all, or the connection
 * lost mid-call, which the client reports as a bare `transport error` or, from its native connection, as a call
 * `Native Promise was dropped without being settled`; or too slow to answer: `Timeout expired`, gRPC
 * DEADLINE_EXCEEDED) while a request starts a run or reads its answer: as
 * transient as MongoDB down, so the same 503 with `retry-after`, never a 500.
 */
function isTemporalUnavailable(error: unknown): boolean {
  if (!(error instanceof TemporalServiceError)) return false;
  const cause = error.cause as { code?: unknown; message?: unknown } | undefined;
  return (
    cause?.code === 14 ||
    cause?.code === 4 ||
    /tcp connect error|transport error|connection refused|unavailable|promise was dropped|timeout expired|deadline exceeded/i.test(
      `${error.message} ${String(cause?.message ?? '')}`,
    )
  );
}

/** 405 (and 501) for a path served with other methods, as the same JSON error as everything else. */
export const jsonAllowedMethods = (router: Router) =>
  router.allowedMethods({
    throw: true,
    methodNotAllowed: () => new ServiceError('method_not_allowed', 'this method is not allowed on this path'),
    notImplemented: () => new ServiceError('method_not_allowed', 'this method is not implemented'),
  });
