import assert from 'node:assert/strict';
import { WORKER_TIERS } from '../../core/tiers.js';
import {
  openAiToolDefinition,
  TOOL_IDS,
  TOOL_INPUT_SCHEMAS,
  TOOLS,
  toolById,
  toolMinTiers,
} from '../../core/tool-registry.js';

describe('tool registry', () => {
  it('seeds the five tools of docs/protocol.md §2.7, in order', () => {
    assert.deepEqual(
      TOOLS.map((t) => t.id),
      ['web-search', 'file-ops', 'python-repl', 'browser-automation', 'code-execution'],
    );
    assert.deepEqual(
      [...TOOL_IDS],
      TOOLS.map((t) => t.id),
    );
  });

  it('gives only web-search an executor', () => {
    assert.deepEqual(
      TOOLS.filter((t) => t.executor).map((t) => t.id),
      ['web-search'],
    );
  });

  it('gates each tool at a worker tier, rising with what it can do on the worker', () => {
    assert.deepEqual(toolMinTiers(), {
      'web-search': 'seedling',
      'file-ops': 'explorer',
      'python-repl': 'navigator',
      'browser-automation': 'trailblazer',
      'code-execution': 'navigator',
    });
    for (const tool of TOOLS) assert.ok(WORKER_TIERS.includes(tool.min_trust_tier));
  });

  it('answers the tiers of named tools only, leaving unknown names ungated', () => {
    assert.deepEqual(toolMinTiers(['python-repl', 'my-own-tool']), { 'python-repl': 'navigator' });
    assert.deepEqual(toolMinTiers([]), {});
  });

  it('finds a tool by id and nothing for an unknown id', () => {
    assert.equal(toolById('file-ops')?.name, 'File operations');
    assert.equal(toolById('rm-rf'), undefined);
    assert.equal(toolById('__proto__'), undefined);
  });

  it('publishes web-search arguments as JSON Schema: query required, count an integer 1..10', () => {
    const schema = toolById('web-search')?.input_schema;
    assert.deepEqual(schema, {
      type: 'object',
      properties: {
        query: { type: 'string', minLength: 1, maxLength: 400, description: 'What to search the web for' },
        count: {
          type: 'integer',
          minimum: 1,
          maximum: 10,
          description: 'How many results to return (default 5)',
        },
      },
      required: ['query'],
      additionalProperties: false,
    });
  });

  it('describes every tool with a name, a description and an object schema of described properties', () => {
    for (const tool of TOOLS) {
      assert.ok(tool.name.length > 0 && tool.description.length > 20, tool.id);
      assert.equal(tool.input_schema.type, 'object', tool.id);
      assert.equal(tool.input_schema.additionalProperties, false, tool.id);
      assert.ok(!('$schema' in tool.input_schema), tool.id);
      const properties = tool.input_schema.properties as Record<string, { description?: string }>;
      for (const [name, property] of Object.entries(properties)) assert.ok(property.description, `${tool.id}.${name}`);
    }
  });

  it('validates arguments with the zod schema the JSON Schema was made from', () => {
    const search = TOOL_INPUT_SCHEMAS['web-search'];
    assert.deepEqual(search.parse({ query: '  parks in Rome ' }), { query: 'parks in Rome' });
    for (const bad of [{}, { query: '' }, { query: 'x', count: 0 }, { query: 'x', count: 11 }, { query: 'x', n: 1 }]) {
      assert.equal(search.safeParse(bad).success, false, JSON.stringify(bad));
    }
    assert.equal(
      TOOL_INPUT_SCHEMAS['browser-automation'].safeParse({ url: 'file:///etc/passwd', action: 'screenshot' }).success,
      false,
    );
  });

  it('turns a tool into an OpenAI function definition whose name is a valid function name', () => {
    for (const tool of TOOLS) {
      const definition = openAiToolDefinition(tool);
      assert.deepEqual(definition, {
        type: 'function',
        function: { name: tool.id, description: tool.description, parameters: tool.input_schema },
      });
      assert.match(definition.function.name, /^[a-zA-Z0-9_-]{1,64}$/);
    }
  });
});
