import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import { POLLERS_CACHE_MS, temporalQueuePollers } from '../../api/temporal-queue-pollers.js';
import {
  ACTIVE_POLLER_MS,
  activeGateways,
  activePollers,
  gatewayIdentity,
  workerIdentity,
  workerPkOfIdentity,
} from '../../core/worker-identity.js';

describe('worker identity in Temporal (core/worker-identity.ts)', () => {
  const pk = 'ab'.repeat(32);
  const now = 1_800_000_000_000;

  it('names a worker by its key and reads the key back; other pollers have none', () => {
    assert.equal(workerPkOfIdentity(workerIdentity(pk)), pk);
    for (const other of ['4242@gateway-host', `geofabric-worker:${pk}x`, `geofabric-worker:${pk.toUpperCase()}`, '']) {
      assert.equal(workerPkOfIdentity(other), null, other);
    }
  });

  it('tells gateways from workers: the seal run counts gateways only, routing workers only', () => {
    const gateway = 'cd'.repeat(32);
    const pollers = [
      { identity: gatewayIdentity(gateway), lastAccessMs: now - 1_000 },
      { identity: workerIdentity(pk), lastAccessMs: now - 1_000 },
      { identity: gatewayIdentity('ef'.repeat(32)), lastAccessMs: now - ACTIVE_POLLER_MS - 1 },
      { identity: '4242@gateway-host', lastAccessMs: now },
    ];
    assert.deepEqual([...activeGateways(pollers, now)], [gateway]);
    assert.deepEqual([...activePollers(pollers, now)], [pk]);
  });

  it('counts the workers that polled within the window only', () => {
    const other = 'cd'.repeat(32);
    const stale = 'ef'.repeat(32);
    const polling = activePollers(
      [
        { identity: workerIdentity(pk), lastAccessMs: now - 5_000 },
        { identity: workerIdentity(other), lastAccessMs: now + 3_000 },
        { identity: workerIdentity(stale), lastAccessMs: now - ACTIVE_POLLER_MS - 1 },
        { identity: workerIdentity('12'.repeat(32)), lastAccessMs: null },
        { identity: '4242@gateway-host', lastAccessMs: now },
      ],
      now,
    );
    assert.deepEqual([...polling].sort(), [pk, other]);
  });
});

describe('temporalQueuePollers (api/temporal-queue-pollers.ts)', () => {
  it("asks DescribeTaskQueue for the queue's activity pollers and keeps the workers that polled lately", async () => {
    const now = 1_800_000_000_000;
    const pk = 'ab'.repeat(32);
    const requests: unknown[] = [];
    // A Long-like seconds field, as the proto client answers.
    const seconds = (ms: number) => ({ toString: () => String(Math.floor(ms / 1000)) });
    const client = {
      workflowService: {
        describeTaskQueue: async (request: unknown) => {
          requests.push(request);
          return {
            pollers: [
              { identity: workerIdentity(pk), lastAccessTime: { seconds: seconds(now - 30_000), nanos: 0 } },
              { identity: workerIdentity('cd'.repeat(32)), lastAccessTime: { seconds: seconds(now - 600_000) } },
              { identity: '77@gateway', lastAccessTime: { seconds: seconds(now) } },
            ],
          };
        },
      },
    } as unknown as Client;
    const pollers = temporalQueuePollers(client, 'default', () => now);
    assert.deepEqual([...(await pollers('geofabric/851e8053fffffff'))], [pk]);
    assert.deepEqual(requests, [
      { namespace: 'default', taskQueue: { name: 'geofabric/851e8053fffffff', kind: 1 }, taskQueueType: 2 },
    ]);
  });
  it('asks Temporal once per queue and second: routing many jobs pays no round trip each, a failure is not kept', async () => {
    let now = 1_800_000_000_000;
    const pk = 'ab'.repeat(32);
    const asked: string[] = [];
    let failNext = false;
    const client = {
      workflowService: {
        describeTaskQueue: async (request: { taskQueue: { name: string } }) => {
          asked.push(request.taskQueue.name);
          if (failNext) {
            failNext = false;
            throw new Error('unavailable');
          }
          return {
            pollers: [{ identity: workerIdentity(pk), lastAccessTime: { seconds: Math.floor(now / 1000), nanos: 0 } }],
          };
        },
      },
    } as unknown as Client;
    const pollers = temporalQueuePollers(client, 'default', () => now);
    const [a, b] = await Promise.all([pollers('q/one'), pollers('q/one')]);
    assert.deepEqual([...a], [pk]);
    assert.deepEqual([...b], [pk]);
    now += POLLERS_CACHE_MS - 1;
    await pollers('q/one');
    await pollers('q/two');
    assert.deepEqual(asked, ['q/one', 'q/two'], 'one look-up per queue within the window');

    now += 1;
    failNext = true;
    await assert.rejects(pollers('q/one'), /unavailable/);
    assert.deepEqual([...(await pollers('q/one'))], [pk], 'the failed look-up is asked again');
    assert.deepEqual(asked, ['q/one', 'q/two', 'q/one', 'q/one']);

    // A kept answer is still judged against the clock: a poller silent for ACTIVE_POLLER_MS no longer counts.
    const stale = temporalQueuePollers(client, 'default', () => now, undefined, ACTIVE_POLLER_MS * 2);
    await stale('q/three');
    now += ACTIVE_POLLER_MS + 1_000;
    assert.deepEqual([...(await stale('q/three'))], []);
  });
});
