import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { LogTimestamp } from '@temporalio/worker';
import { pino } from 'pino';
import { pinoTemporalLogger } from '../../bin/temporal-logger.js';

const run = promisify(execFile);
const TEMPORAL_LOGGER = fileURLToPath(new URL('../../bin/temporal-logger.ts', import.meta.url));

/** A pino logger at `level` whose JSON lines land in the returned array. */
function capture(level = 'info') {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level }, sink), lines };
}

describe('Temporal SDK logs through pino', () => {
  it('writes each SDK level as a pino JSON line with its metadata, tagged component=temporal', () => {
    const { logger, lines } = capture('trace');
    const log = pinoTemporalLogger(logger);
    log.trace('t');
    log.debug('d', { taskQueue: 'geofabric/jobs' });
    log.info('i');
    log.warn('w', { sdkComponent: 'worker' });
    log.error('e');
    log.log('WARN', 'via log');
    assert.deepEqual(
      lines.map((l) => [l.level, l.msg, l.component]),
      [
        [10, 't', 'temporal'],
        [20, 'd', 'temporal'],
        [30, 'i', 'temporal'],
        [40, 'w', 'temporal'],
        [50, 'e', 'temporal'],
        [40, 'via log', 'temporal'],
      ],
    );
    assert.equal(lines[1]!.taskQueue, 'geofabric/jobs');
    assert.equal(lines[3]!.sdkComponent, 'worker');
  });

  it("serialises an SDK error as pino's err and keeps a forwarded Core entry's fields", () => {
    const { logger, lines } = capture();
    const log = pinoTemporalLogger(logger);
    log.error('Activity failed', { error: new Error('upstream down'), activityType: 'inferenceStep' });
    // What the Runtime forwards from Core: a symbol timestamp, the component, the Rust target and its fields.
    log.log('WARN', 'Network error while polling', {
      [LogTimestamp]: 1_795_000_000_000_000_000n,
      sdkComponent: 'core',
      target: 'temporal_sdk_core::pollers',
      attempt: 3,
    });
    assert.equal((lines[0]!.err as { message: string }).message, 'upstream down');
    assert.equal((lines[0]!.err as { type: string }).type, 'Error');
    assert.equal(lines[0]!.activityType, 'inferenceStep');
    assert.equal(lines[0]!.error, undefined);
    assert.deepEqual(
      [lines[1]!.msg, lines[1]!.sdkComponent, lines[1]!.target, lines[1]!.attempt],
      ['Network error while polling', 'core', 'temporal_sdk_core::pollers', 3],
    );
  });

  it('drops what the pino level hides', () => {
    const { logger, lines } = capture('warn');
    const log = pinoTemporalLogger(logger);
    log.info('chatty');
    log.warn('kept');
    assert.deepEqual(
      lines.map((l) => l.msg),
      ['kept'],
    );
  });

  it("installs the Runtime with the process logger, so the SDK's own logger writes JSON lines", async function () {
    this.timeout(30_000);
    // A process of its own: a Runtime is per process and the unit suite's tests install theirs.
    const script = `
      const { pino } = await import('pino');
      const { Runtime } = await import('@temporalio/worker');
      const { installTemporalRuntime } = await import(${JSON.stringify(TEMPORAL_LOGGER)});
      const logger = pino({ level: 'info' });
      const first = installTemporalRuntime(logger);
      const second = installTemporalRuntime(logger);
      Runtime.instance().logger.warn('from the sdk', { taskQueue: 'q' });
      console.log(JSON.stringify({ first, second }));
      await Runtime.instance().shutdown();
    `;
    const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script]);
    const lines = stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(
      lines.find((l) => 'first' in l),
      { first: true, second: false },
    );
    const sdk = lines.find((l) => l.msg === 'from the sdk');
    assert.ok(sdk, stdout);
    assert.deepEqual([sdk.level, sdk.component, sdk.taskQueue], [40, 'temporal', 'q']);
  });
});
