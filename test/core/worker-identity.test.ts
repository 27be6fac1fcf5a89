import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import { POLLERS_CACHE_MS, POLLERS_STALE_MS, temporalQueuePollers } from '../../api/temporal-queue-pollers.js';
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

    // Past the stale window the look-up is awaited, and a failed one is not kept.
    now += POLLERS_STALE_MS;
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

  it('serves an expired answer at once while one look-up refreshes it: a routed job does not wait for Temporal', async () => {
    let now = 1_800_000_000_000;
    const [a, b] = ['ab'.repeat(32), 'cd'.repeat(32)];
    let polling = [a];
    let release: (() => void) | undefined;
    let failNext = false;
    const asked: number[] = [];
    const client = {
      workflowService: {
        describeTaskQueue: async () => {
          asked.push(now);
          const answer = polling.map((pk) => ({
            identity: workerIdentity(pk),
            lastAccessTime: { seconds: Math.floor(now / 1000), nanos: 0 },
          }));
          await new Promise<void>((resolve) => (release = resolve));
          if (failNext) {
            failNext = false;
            throw new Error('unavailable');
          }
          return { pollers: answer };
        },
      },
    } as unknown as Client;
    const pollers = temporalQueuePollers(client, 'default', () => now);
    const first = pollers('q/one');
    release!();
    assert.deepEqual([...(await first)], [a]);

    // Expired: the kept answer comes back before the look-up behind it has answered.
    now += POLLERS_CACHE_MS;
    polling = [a, b];
    let served: string[] | undefined;
    const expired = pollers('q/one').then((pks) => (served = [...pks]));
    const again = pollers('q/one'); // shares the one look-up under way
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(served, [a], 'served without waiting for DescribeTaskQueue');
    assert.equal(asked.length, 2, 'one look-up for both');
    release!();
    await Promise.all([expired, again]);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual([...(await pollers('q/one'))], [a, b], 'the refreshed answer serves the next job');
    assert.equal(asked.length, 2);

    // A failed refresh keeps the answer before it, and the next expired call asks again.
    now += POLLERS_CACHE_MS;
    failNext = true;
    assert.deepEqual([...(await pollers('q/one'))], [a, b]);
    release!();
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual([...(await pollers('q/one'))], [a, b]);
    assert.equal(asked.length, 4, 'the failed look-up was not kept: asked again');
    release!();

    // An expired answer naming no poller is not served: a worker polling since is routed to at once.
    polling = [];
    const empty = pollers('q/empty');
    release!();
    assert.deepEqual([...(await empty)], []);
    now += POLLERS_CACHE_MS;
    polling = [a];
    const later = pollers('q/empty');
    release!();
    assert.deepEqual([...(await later)], [a]);
  });
});
