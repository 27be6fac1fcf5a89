import assert from 'node:assert/strict';
import { toolPolicyRefusal, toolScopeRefusal } from '../../core/gates/tool-policy.js';
import { normalizeToolName, toolScope } from '../../core/gates/tool-scope.js';
import { resolveJurisdiction } from '../../core/jurisdiction.js';
import { examplePolicy } from '../helpers/tool-policy.js';

const BEIJING = '8631aa42fffffff';

describe('tool scope: the tools a request can cause to run, one collection for every entry point', () => {
  it('collects compute steps, chat svc.tools and function tool names from any body, normalised, each once', () => {
    const body = {
      steps: [{ tools: ['web-search', 'File-Ops'] }, { tools: [' web-search '] }, 'not a step', { tools: 'x' }],
      svc: { tools: ['python-repl', 7] },
      tools: [
        { type: 'function', function: { name: 'WEB-SEARCH' } },
        { type: 'function', function: { name: 'get_weather' } },
        { type: 'function' },
        'code-execution',
      ],
    };
    assert.deepEqual(toolScope({ kind: 'body', body }), ['web-search', 'file-ops', 'python-repl', 'get_weather']);
    // A worker's registration lists the tools it offers, not tools to run: plain strings are not collected.
    assert.deepEqual(toolScope({ kind: 'body', body: { tools: ['web-search'] } }), []);
    assert.deepEqual(toolScope({ kind: 'body', body: null }), []);
    assert.deepEqual(toolScope({ kind: 'mcp', tool: 'Perception_Classify' }), ['perception_classify']);
    assert.deepEqual(toolScope({ kind: 'taken', tools: ['web-search', 'WEB-SEARCH', ''] }), ['web-search']);
  });

  it('folds case, width, zero-width characters, dashes and spacing', () => {
    for (const variant of [
      'WEB-SEARCH',
      ' web-search\t',
      'ｗｅｂ－ｓｅａｒｃｈ',
      'web\u200b-search',
      'web\u2010search',
    ]) {
      assert.equal(normalizeToolName(variant), 'web-search', JSON.stringify(variant));
    }
  });

  it('lets gate 5 refuse every variant of a refused tool, whichever side names it', () => {
    const policy = examplePolicy();
    const beijing = resolveJurisdiction(BEIJING);
    for (const variant of ['WEB-SEARCH', 'ｗｅｂ－ｓｅａｒｃｈ', 'web\u200b-search']) {
      assert.equal(toolPolicyRefusal(policy, variant, beijing, {})?.rule, 'cn-no-web-search', variant);
    }
    const shouting = { version: 1 as const, rules: [{ id: 'r', tools: ['WEB-SEARCH'], jurisdictions: ['cn'] }] };
    assert.equal(toolScopeRefusal(shouting, ['web-search'], [BEIJING], {})?.rule, 'r');
    assert.equal(toolScopeRefusal(shouting, [], [BEIJING], {}), null);
  });
});
