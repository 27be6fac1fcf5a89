/**
 * `perception_embed` (docs/protocol.md §4.2): listed so agents can discover it, not available yet (planned). It still
 * validates its cell, so the pre-flight and the breadcrumb see the call like any other.
 */
import { cellArgument } from '../../shared/structured.js';
import { ToolError, type PerceptionTool } from '../tool-def.js';

export const embedInputSchema = {
  h3_cell: cellArgument('the cell to embed'),
};

export function createEmbedTool(): PerceptionTool {
  const tool: PerceptionTool<typeof embedInputSchema> = {
    name: 'perception_embed',
    title: 'Embed an H3 cell (planned)',
    description: 'Planned: a geospatial embedding of an H3 cell. Not available yet; calls answer not_available.',
    inputSchema: embedInputSchema,
    facet: 'perception',
    cellOf: (args) => args.h3_cell,
    run() {
      return Promise.reject(new ToolError('not_available', 'perception_embed is not available (planned)'));
    },
  };
  // Widened for PerceptionTool[] lists: cellOf's argument type is what keeps the typed tool from widening itself.
  return tool as PerceptionTool;
}
