import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { loadConfig } from '../../bin/config.js';
import { prettyLine, resolveLogFormat } from '../../bin/log-output.js';

const run = promisify(execFile);
const LOG_OUTPUT = fileURLToPath(new URL('../../bin/log-output.ts', import.meta.url));

/** A process that logs two records through the process logger, its stdout captured (a pipe, not a TTY). */
async function logsOf(env: Record<string, string>): Promise<string> {
  const script = `
    const { createProcessLogger } = await import(${JSON.stringify(LOG_OUTPUT)});
    const log = createProcessLogger({ logLevel: 'info', logFormat: process.env.LOG_FORMAT ?? 'auto' });
    log.info({ request_id: 'r-1', status: 200, path: '/v1/models' }, 'request');
    log.error({ err: new Error('disk on fire') }, 'store failed');
  `;
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env: { ...process.env, ...env },
  });
  return stdout;
}

describe('process logs (LOG_FORMAT)', () => {
  const record = (extra: Record<string, unknown>) =>
    JSON.stringify({ level: 30, time: Date.UTC(2026, 10, 26, 9, 5, 7), pid: 1, hostname: 'h', ...extra });

  it('prints a record as `HH:MM:SS level msg key=value …`', () => {
    assert.equal(
      prettyLine(record({ msg: 'request', request_id: 'r-1', status: 200, path: '/v1/models' }), { utc: true }),
      '09:05:07 info  request request_id=r-1 status=200 path=/v1/models\n',
    );
  });

  it('quotes values with spaces, quotes or newlines, shows objects as JSON, keeps one line per record', () => {
    const line = prettyLine(
      record({ level: 40, msg: 'two\nlines', detail: 'a b', quote: 'say "x"', place: { cell: '85' }, none: null }),
      { utc: true },
    );
    assert.equal(line, '09:05:07 warn  two lines detail="a b" quote="say \\"x\\"" place={"cell":"85"} none=null\n');
  });

  it("prints an error's message inline and its stack on indented lines after it", () => {
    const line = prettyLine(
      record({ level: 50, msg: 'failed', err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at x' } }),
      { utc: true },
    );
    assert.equal(line, '09:05:07 error failed err=boom\n    Error: boom\n        at x\n');
  });

  it('colours the level for a terminal, and passes a line that is not JSON through', () => {
    assert.equal(prettyLine(record({ msg: 'x' }), { utc: true, color: true }), '09:05:07 \x1b[32minfo \x1b[0m x\n');
    assert.equal(prettyLine('not json'), 'not json\n');
  });

  it('chooses pretty on a terminal and JSON elsewhere unless LOG_FORMAT says which', () => {
    assert.equal(resolveLogFormat('auto', true), 'pretty');
    assert.equal(resolveLogFormat('auto', false), 'json');
    assert.equal(resolveLogFormat('json', true), 'json');
    assert.equal(resolveLogFormat('pretty', false), 'pretty');
    assert.equal(loadConfig({}).logFormat, 'auto');
    assert.equal(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat, 'pretty');
    assert.throws(() => loadConfig({ LOG_FORMAT: 'fancy' }), /LOG_FORMAT/);
  });

  it('a process writes JSON lines to a pipe by default, readable lines with LOG_FORMAT=pretty', async () => {
    const json = (await logsOf({})).trim().split('\n');
    assert.equal(json.length, 2);
    const first = JSON.parse(json[0]!) as Record<string, unknown>;
    assert.equal(first.msg, 'request');
    assert.equal(first.request_id, 'r-1');

    const pretty = (await logsOf({ LOG_FORMAT: 'pretty' })).split('\n');
    assert.match(pretty[0]!, /^\d\d:\d\d:\d\d info {2}request request_id=r-1 status=200 path=\/v1\/models$/);
    assert.match(pretty[1]!, /^\d\d:\d\d:\d\d error store failed err="disk on fire"$/);
    assert.match(pretty[2]!, /^ {4}Error: disk on fire$/);
  });
});
