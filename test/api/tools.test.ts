import assert from 'node:assert/strict';
import { TOOLS } from '../../core/tool-registry.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

interface ToolBody {
  object: string;
  id: string;
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
  min_trust_tier: string;
  executor: boolean;
}

describe('tool registry routes (GET /v1/tools, /v1/tools/:tool_id)', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ config: { apiKeys: ['sk-test-one'] } });
  });
  after(() => gw.close());

  it('lists the five seeded tools publicly, without an API key', async () => {
    const res = await gw.get('/v1/tools');
    assert.equal(res.status, 200);
    const body = res.body as { object: string; data: ToolBody[] };
    assert.equal(body.object, 'list');
    assert.deepEqual(
      body.data.map((t) => [t.id, t.min_trust_tier, t.executor]),
      [
        ['web-search', 'seedling', true],
        ['file-ops', 'explorer', false],
        ['python-repl', 'navigator', false],
        ['browser-automation', 'trailblazer', false],
        ['code-execution', 'navigator', false],
      ],
    );
    for (const tool of body.data) {
      assert.equal(tool.object, 'tool');
      assert.ok(tool.name && tool.description, tool.id);
      assert.equal(tool.input_schema.type, 'object', tool.id);
    }
  });

  it('serves one tool with its JSON input schema', async () => {
    const res = await gw.get('/v1/tools/web-search');
    assert.equal(res.status, 200);
    const tool = res.body as ToolBody;
    assert.deepEqual(tool, { object: 'tool', ...TOOLS[0] });
    assert.deepEqual((tool.input_schema as { required: string[] }).required, ['query']);
  });

  it('answers 404 tool_not_found for an unknown tool, with a JSON error body', async () => {
    for (const id of ['nope', 'WEB-SEARCH', '__proto__', '%F0%9F%94%A7']) {
      const res = await gw.get(`/v1/tools/${id}`);
      assert.equal(res.status, 404, id);
      assert.equal((res.body as { error: string }).error, 'tool_not_found', id);
    }
  });

  it('refuses other methods on the registry', async () => {
    const res = await gw.post('/v1/tools', {});
    assert.equal(res.status, 405);
    assert.equal((res.body as { error: string }).error, 'method_not_allowed');
  });
});
