/**
 * Both MCP servers driven by the official Python MCP SDK (2.x), as a Python agent connects (docs/guide.md):
 * the SDK's default mode opens with `server/discover` and speaks the stateless 2026-07-28 revision, its legacy
 * mode the initialize handshake; both list tools and get structured results the SDK validates against the
 * tools' output schemas; a bad bearer token reaches the agent as an error naming the reason.
 *
 * MCP_PYTHON names a Python with `mcp` installed (.ci/run makes one in a venv). Without it the suite fails in
 * CI and is skipped elsewhere, saying why.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { spawnGeofabric, type GeofabricProcess } from '../helpers/geofabric-process.js';

const run = promisify(execFile);
const CLIENT = join(import.meta.dirname, 'fixtures', 'mcp_python_client.py');
const python = process.env.MCP_PYTHON;

interface Answer {
  protocol?: string;
  tools?: string[];
  has_output_schema?: boolean;
  is_error?: boolean;
  structured?: Record<string, unknown>;
  error?: string[];
}

async function pythonClient(url: string, mode: 'auto' | 'legacy', tool: string, bearer?: string): Promise<Answer> {
  const { stdout } = await run(python!, [CLIENT, url, mode, tool, ...(bearer ? [bearer] : [])], { timeout: 60_000 });
  return JSON.parse(stdout) as Answer;
}

async function listening(node: GeofabricProcess, msg: string): Promise<string> {
  for (let i = 0; i < 300; i++) {
    const line = node.lines.find((l) => l.msg === msg);
    if (typeof line?.url === 'string') return line.url;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no "${msg}": ${node.stderr()}`);
}

describe('MCP servers with the official Python SDK (live)', function () {
  this.timeout(120_000);
  let node: GeofabricProcess;
  let dataDir: string;
  let perception: string;
  let governance: string;

  before(async function () {
    if (!python) {
      if (process.env.CI) throw new Error('MCP_PYTHON is not set: .ci/run installs the Python MCP SDK and sets it');
      this.skip();
    }
    dataDir = mkdtempSync(join(tmpdir(), 'geofabric-python-mcp-'));
    node = spawnGeofabric(['start'], {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: '0',
      PERCEPTION_PORT: '0',
      GOVERNANCE_PORT: '0',
      LOG_FORMAT: 'json',
    });
    perception = `${await listening(node, 'geofabric perception listening')}/mcp`;
    governance = `${await listening(node, 'geofabric governance listening')}/mcp`;
  });
  after(async () => {
    if (node) {
      node.child.kill('SIGTERM');
      await new Promise((resolve) => node.child.once('exit', resolve));
    }
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  for (const [server, url, tool] of [
    ['perception', () => perception, 'idn_get_trust_score'],
    ['governance', () => governance, 'generate_audit_proof'],
  ] as const) {
    it(`${server}: the SDK's default mode speaks 2026-07-28 statelessly and gets validated structured results`, async () => {
      const answer = await pythonClient(url(), 'auto', tool);
      assert.equal(answer.error, undefined, String(answer.error));
      // discover answered on the first try: a failed probe would have fallen back to the 2025-11-25 handshake
      assert.equal(answer.protocol, '2026-07-28');
      assert.ok(answer.tools?.includes(tool), String(answer.tools));
      assert.equal(answer.has_output_schema, true);
      assert.equal(answer.is_error, false);
      assert.equal(answer.structured?.status, 'ok');
    });

    it(`${server}: the SDK's legacy mode keeps the initialize handshake and its session`, async () => {
      const answer = await pythonClient(url(), 'legacy', tool);
      assert.equal(answer.error, undefined, String(answer.error));
      assert.equal(answer.protocol, '2025-11-25');
      assert.equal(answer.structured?.status, 'ok');
    });
  }

  it('a bad bearer token reaches the Python agent as an error naming the reason', async () => {
    const answer = await pythonClient(perception, 'auto', 'idn_get_trust_score', 'not-a-token');
    assert.ok(answer.error, 'refused');
    assert.match(answer.error.join('\n'), /token is not a compact JWT/);
  });
});
