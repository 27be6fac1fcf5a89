import { toolScope } from './tool-scope.js';

/**
 * What the gates need to know about a request, read defensively from its raw parts: the body has not
 * been schema-validated yet when gates 2 and 3 run (gate 1 must run before anything else), so nothing
 * here trusts its shape.
 */
export interface RequestParts {
  body: unknown;
  params: Record<string, string | undefined>;
  query: Record<string, string | string[] | undefined>;
  header: (name: string) => string | undefined;
}

export interface NamedValue {
  where: string;
  value: unknown;
}

export interface RequestScope {
  /** Every H3 cell the request names, with where it was named (for error details). */
  cells: NamedValue[];
  /** The cell the request asks to run in, before defaults: body, then path, then query, then header. */
  requestedCell: NamedValue | undefined;
  /** Step types the request asks for (delegation facets). */
  stepTypes: string[];
  /** Tools the request can cause to run, normalised (core/gates/tool-scope.ts): gates 3 and 5 judge these. */
  tools: string[];
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const PATH_CELL_PARAMS = ['h3_cell', 'cell'] as const;

export function requestScope(parts: RequestParts): RequestScope {
  const cells: NamedValue[] = [];
  const stepTypes = new Set<string>();
  const body = isRecord(parts.body) ? parts.body : {};

  if (body.h3_cell !== undefined) cells.push({ where: 'body.h3_cell', value: body.h3_cell });
  for (const name of PATH_CELL_PARAMS) {
    const value = parts.params[name];
    if (value !== undefined) cells.push({ where: `path ${name}`, value });
  }
  const queryCell = parts.query.cell;
  if (queryCell !== undefined) cells.push({ where: 'query cell', value: queryCell });
  const headerCell = parts.header('x-svc-h3-cell');
  if (headerCell !== undefined) cells.push({ where: 'header x-svc-h3-cell', value: headerCell });
  const requestedCell = cells[0];

  if (Array.isArray(body.steps)) {
    body.steps.forEach((step, i) => {
      if (!isRecord(step)) return;
      if (typeof step.type === 'string') stepTypes.add(step.type);
      if (step.center_cell !== undefined) cells.push({ where: `steps[${i}].center_cell`, value: step.center_cell });
      if (isRecord(step.context) && step.context.h3_cell !== undefined) {
        cells.push({ where: `steps[${i}].context.h3_cell`, value: step.context.h3_cell });
      }
    });
  }
  // Most requests (every GET) have no body, and so no tools.
  const tools = isRecord(parts.body) ? toolScope({ kind: 'body', body: parts.body }) : [];
  return { cells, requestedCell, stepTypes: [...stepTypes], tools };
}
