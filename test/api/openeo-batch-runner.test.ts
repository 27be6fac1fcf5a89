/**
 * The openEO batch runners (api/openeo/batch-runner.ts): under Temporal a start is one `openEoBatchJob` workflow
 * per start of a job on the job queue, found in the Web UI by cell and status, and a cancel cancels that run;
 * embedded, the run activity runs in process and `close` waits for it.
 */
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import type { OpenEoBatchActivities } from '../../activities/imagery/openeo-batch.js';
import { createEmbeddedOpenEoRunner, createTemporalOpenEoRunner } from '../../api/openeo/batch-runner.js';
import { DEFAULT_QUEUE_NAMING, jobQueue } from '../../core/task-queues.js';
import { H3_CELL, JOB_STATUS } from '../../workflows/search-attributes.js';

describe('openEO batch runners', () => {
  it('starts one openEoBatchJob workflow per start on the job queue, and cancels that run', async () => {
    const started: { type: string; options: Record<string, unknown> }[] = [];
    const canceled: string[] = [];
    const client = {
      workflow: {
        start: async (type: string, options: Record<string, unknown>) => void started.push({ type, options }),
        getHandle: (id: string) => ({
          cancel: async () => {
            canceled.push(id);
            if (id.endsWith('-2')) throw new Error('workflow execution already completed');
          },
        }),
      },
    } as unknown as Client;
    const runner = createTemporalOpenEoRunner({ client, naming: DEFAULT_QUEUE_NAMING, runTimeoutMs: 60_000 });
    assert.equal(runner.mode, 'temporal');
    await runner.start({ job_id: 'j-1', run: 1, h3_cell: '861e8050fffffff' });
    assert.equal(started.length, 1);
    const [{ type, options }] = started as [(typeof started)[0]];
    assert.equal(type, 'openEoBatchJob');
    assert.equal(options.workflowId, 'openeo-j-1-1');
    assert.equal(options.taskQueue, jobQueue(DEFAULT_QUEUE_NAMING));
    assert.deepEqual(options.args, [{ job_id: 'j-1', run: 1 }]);
    assert.deepEqual(options.typedSearchAttributes, [
      { key: H3_CELL, value: '861e8050fffffff' },
      { key: JOB_STATUS, value: 'queued' },
    ]);
    await runner.cancel({ job_id: 'j-1', run: 1, h3_cell: '861e8050fffffff' });
    await runner.cancel({ job_id: 'j-1', run: 2, h3_cell: '861e8050fffffff' }); // a closed run: nothing to do
    assert.deepEqual(canceled, ['openeo-j-1-1', 'openeo-j-1-2']);
  });

  it('runs the activity in process and waits for it on close, a failure logged rather than thrown', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const runs: string[] = [];
    const activities: OpenEoBatchActivities = {
      runOpenEoBatchJob: async ({ job_id }) => {
        runs.push(job_id);
        await gate;
        if (job_id === 'bad') throw new Error('boom');
        return { status: 'finished' };
      },
    };
    const logged: unknown[] = [];
    const logger = { error: (o: unknown) => void logged.push(o) } as never;
    const runner = createEmbeddedOpenEoRunner(activities, logger);
    await runner.start({ job_id: 'good', run: 1, h3_cell: '861e8050fffffff' });
    await runner.start({ job_id: 'bad', run: 1, h3_cell: '861e8050fffffff' });
    assert.deepEqual(runs, ['good', 'bad'], 'started before start returns');
    let closed = false;
    const closing = runner.close().then(() => (closed = true));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(closed, false, 'close waits for the runs');
    release();
    await closing;
    assert.equal(logged.length, 1);
  });
});
