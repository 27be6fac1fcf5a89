/**
 * Structured tool results of both MCP servers (docs/protocol.md §4.2, "Tool results"): every tool declares an
 * `outputSchema` and answers `structuredContent` matching it, with the same JSON in a text block for clients
 * that read text. A result carries `status: "ok" | "error"` (what clients of the tools these replace read);
 * an error is `isError: true` with `{status: "error", code, detail}`; a result about a cell carries the cell
 * centroid as `lat`/`lon`. The SDK client validates `structuredContent` against the schema on errors too, so
 * the schema is one object whose domain fields are optional: present when `status` is "ok".
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { cellToLatLng } from 'h3-js';
import { z } from 'zod';
import { DEFAULT_PERCEPTION_CELL, isCell } from '../../core/h3-cell.js';

/** An H3 cell argument: pattern, validity and an example in the JSON Schema an LLM reads. */
export function cellArgument(description: string) {
  return z
    .string()
    .regex(/^[0-9a-f]{15}$/, 'must be an H3 cell index: 15 lowercase hex')
    .refine(isCell, 'must be a valid H3 cell (15 lowercase hex)')
    .describe(`${description}: an H3 cell index (15 lowercase hex, resolution 0-15)`)
    .meta({ examples: [DEFAULT_PERCEPTION_CELL] });
}

/** The output schema of a tool: status, error fields, centroid, and the tool's own fields (optional). */
export function outputSchemaOf(fields: z.ZodRawShape = {}) {
  const optional = Object.fromEntries(
    Object.entries(fields).map(([name, schema]) => [name, (schema as z.ZodType).optional()]),
  );
  return z.looseObject({
    status: z.enum(['ok', 'error']).describe('"ok": the call did its work; "error": see code and detail'),
    code: z.string().optional().describe('when status is "error": the error code, e.g. upstream_unavailable'),
    detail: z.string().optional().describe('when status is "error": what went wrong, for a human'),
    lat: z.number().optional().describe('latitude of the cell centroid (WGS84 degrees), when a cell is involved'),
    lon: z.number().optional().describe('longitude of the cell centroid (WGS84 degrees), when a cell is involved'),
    ...optional,
  });
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A successful result: the value as structuredContent (a non-object under `result`), status and centroid added.
 * A signed document (`document` names it, e.g. an audit bundle) stays byte for byte what was signed in the text
 * block, and sits under that name in structuredContent.
 */
export function okResult(value: unknown, cell?: string, document?: string): CallToolResult {
  if (document !== undefined) {
    return {
      content: [{ type: 'text', text: JSON.stringify(value) }],
      structuredContent: { status: 'ok', [document]: value },
    };
  }
  const structured: Record<string, unknown> = isPlainObject(value) ? { ...value } : { result: value ?? null };
  if (structured.status !== 'ok' && structured.status !== 'error') {
    // A tool's own `status` (another meaning) keeps its value under another name.
    if (structured.status !== undefined) structured.tool_status = structured.status;
    structured.status = 'ok';
  }
  if (
    cell !== undefined &&
    isCell(cell) &&
    (typeof structured.lat !== 'number' || typeof structured.lon !== 'number')
  ) {
    const [lat, lon] = cellToLatLng(cell);
    structured.lat = lat;
    structured.lon = lon;
  }
  return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
}

/** A tool error: `text` as today's clients read it, `{status, code, detail}` structured. */
export function errorResult(code: string, detail: string, text = `${code}: ${detail}`): CallToolResult {
  return {
    content: [{ type: 'text', text }],
    structuredContent: { status: 'error', code, detail },
    isError: true,
  };
}
