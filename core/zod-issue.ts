import type { z } from 'zod';

/** The first schema issue as `path: message`, naming `subject` when the whole value is at fault. */
export function describeZodIssue(error: z.ZodError, subject: string): string {
  const issue = error.issues[0];
  if (issue === undefined) return `invalid ${subject}`;
  return `${issue.path.length > 0 ? issue.path.join('.') : subject}: ${issue.message}`;
}
