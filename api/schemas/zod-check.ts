import type { z } from 'zod';
import { fail, pass, type Check } from '../../core/check.js';

/** zod result → Check, naming the first offending field as a JSON path (`steps[0].zoom`). */
export function zodCheck<T>(schema: z.ZodType<T>, value: unknown, subject: 'body' | 'query' = 'body'): Check<T> {
  const result = schema.safeParse(value);
  if (result.success) return pass(result.data);
  const issue = result.error.issues[0];
  const path = (issue?.path ?? []).map((key, i) =>
    typeof key === 'number' ? `[${key}]` : `${i === 0 ? '' : '.'}${String(key)}`,
  );
  const where = path.length === 0 ? subject : path.join('');
  return fail('invalid_request', `${where}: ${issue?.message ?? 'invalid'}`, path.length === 0 ? undefined : where);
}
