import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseToolPolicy, type ToolPolicy } from '../../core/gates/tool-policy.js';

/** The example policy the docs ship (docs/examples/tool-policy.json), parsed as TOOL_POLICY_FILE is. */
export function examplePolicy(): ToolPolicy {
  const parsed = parseToolPolicy(JSON.parse(readFileSync('docs/examples/tool-policy.json', 'utf8')));
  assert.ok(parsed.ok, parsed.ok ? '' : parsed.detail);
  return parsed.policy;
}
