import assert from 'node:assert/strict';
import { ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** The text of a tool result's first (text) content. */
export function textOf(result: CallToolResult): string {
  const content = result.content[0];
  assert.equal(content?.type, 'text');
  return (content as { text: string }).text;
}

/**
 * A refused MCP tool call: a tool error, or a JSON-RPC invalid-params error (-32602); never an internal error
 * (-32603) and never a result. Returns the message.
 */
export async function refusal(call: Promise<unknown>): Promise<string> {
  let result: CallToolResult;
  try {
    result = (await call) as CallToolResult;
  } catch (error) {
    assert.ok(error instanceof McpError, `not an MCP error: ${String(error)}`);
    assert.equal(error.code, ErrorCode.InvalidParams, error.message);
    return error.message;
  }
  assert.equal(result.isError, true, `expected a refusal, got ${textOf(result).slice(0, 300)}`);
  assert.doesNotMatch(textOf(result), /internal_error/);
  return textOf(result);
}
