import { timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';
import { ServiceError } from '../core/errors.js';

/**
 * The operator credential (OPERATOR_TOKEN): `Authorization: Bearer <token>` on the views that list other
 * people's jobs (`GET /v1/compute/recent`, `GET /svc/inference/recent`). True for the operator; false when the
 * request sends no Authorization. A sent credential that is not the operator's is 401, never a quiet downgrade
 * to the public view, so a misconfigured dashboard says so. Unset token: nobody is the operator.
 */
export function isOperator(ctx: Context, operatorToken: string | undefined): boolean {
  const authorization = ctx.get('authorization');
  if (authorization === '') return false;
  const given = /^Bearer\s+(\S+)$/i.exec(authorization)?.[1];
  if (given !== undefined && operatorToken !== undefined && operatorToken !== '') {
    const [a, b] = [Buffer.from(given), Buffer.from(operatorToken)];
    if (a.length === b.length && timingSafeEqual(a, b)) return true;
  }
  throw new ServiceError('unauthorized', 'this view takes the operator token: Authorization: Bearer <OPERATOR_TOKEN>');
}
