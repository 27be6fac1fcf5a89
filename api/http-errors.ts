import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import { ServiceError } from '../core/errors.js';

/**
 * Every failure leaves as `{ error, detail? }` JSON with the table's status, and nothing internal (stack,
 * message of an unexpected error) ever reaches the client. Runs inside the request context
 * (api/request-context.ts), which logs the request's line with the code noted here.
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
        logger.error({ err: error, request_id: ctx.state.requestId as string | undefined }, 'unhandled error');
      }
      ctx.state.errorCode = failure.code;
      ctx.status = failure.status;
      ctx.set(failure.headers);
      ctx.body = failure.toBody();
    }
  };
}
