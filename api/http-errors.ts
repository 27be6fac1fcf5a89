import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import { ServiceError } from '../core/errors.js';

/**
 * Outermost middleware: every failure leaves as `{ error, detail? }` JSON with the table's status, and
 * nothing internal (stack, message of an unexpected error) ever reaches the client.
 */
export function errorMiddleware(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new ServiceError('not_found', `no route for ${ctx.method} ${ctx.path}`);
      }
    } catch (error) {
      const failure =
        error instanceof ServiceError ? error : new ServiceError('internal_error', 'an internal error occurred');
      if (!(error instanceof ServiceError)) {
        logger.error({ err: error, requestId: ctx.state.requestId as string }, 'unhandled error');
      }
      ctx.status = failure.status;
      ctx.set(failure.headers);
      ctx.body = failure.toBody();
    }
  };
}

/** Echo a caller's X-Request-Id (when sane) or assign one, so a client can quote it in a bug report. */
export const requestIdMiddleware: Middleware = async (ctx, next) => {
  const given = ctx.get('x-request-id');
  const id = /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
  ctx.state.requestId = id;
  ctx.set('x-request-id', id);
  await next();
};
