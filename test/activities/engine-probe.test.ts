import assert from 'node:assert/strict';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createEngineProbeActivities } from '../../activities/engine-probe.js';

describe('engine-probe activities', () => {
  it('echoes the message with the attempt number and the injected clock', async () => {
    const activities = createEngineProbeActivities({ now: () => new Date('2026-01-01T00:00:00Z') });
    const env = new MockActivityEnvironment({ attempt: 2 });
    assert.deepEqual(await env.run(activities.echo, 'ping'), {
      message: 'ping',
      attempt: 2,
      echoedAt: '2026-01-01T00:00:00.000Z',
    });
  });
});
