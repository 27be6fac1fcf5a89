import { fail, pass } from '../../core/check.js';
import { TOOLS, toolById, type Tool } from '../../core/tool-registry.js';
import { route } from '../route-spec.js';
import { toolIdParams } from '../schemas/param-docs.js';
import { toolListSchema, toolSchema } from '../schemas/service-responses.js';

/**
 * The tool registry (docs/protocol.md §2.7, §4.1): `GET /v1/tools` (public) and `GET /v1/tools/:tool_id`. The shape is ours
 * (the protocol leaves its shape open), in the OpenAI list style of /v1/models: `{ object: 'list', data: [tool …] }`, each tool
 * `{ object: 'tool', id, name, description, input_schema, min_trust_tier, executor }`. `executor` says
 * whether Geofabric runs the tool (only web-search; docs/protocol.md §2.7); `input_schema` is JSON Schema and is the
 * `parameters` of the tool's OpenAI function definition.
 */
const toolBody = (tool: Tool) => ({ object: 'tool' as const, ...tool });

export const toolRoutes = () => [
  route({
    method: 'GET',
    path: '/v1/tools',
    auth: 'public',
    preflight: () => pass(undefined),
    handler: async (ctx) => {
      ctx.body = { object: 'list', data: TOOLS.map(toolBody) };
    },
    docs: {
      summary: 'Registered tools',
      tags: ['Tools'],
      responses: { 200: { description: 'The tool registry', schema: toolListSchema } },
    },
  }),
  route({
    method: 'GET',
    path: '/v1/tools/:tool_id',
    auth: 'public',
    preflight: ({ params }) => {
      const tool = toolById(params.tool_id ?? '');
      return tool
        ? pass(tool)
        : fail('tool_not_found', `no tool ${JSON.stringify(params.tool_id ?? '')} in the registry`);
    },
    handler: async (ctx, tool) => {
      ctx.body = toolBody(tool);
    },
    docs: {
      summary: 'One registered tool',
      tags: ['Tools'],
      params: toolIdParams,
      responses: { 200: { description: 'The tool', schema: toolSchema } },
      errors: ['tool_not_found'],
    },
  }),
];
