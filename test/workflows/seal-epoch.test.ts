import assert from 'node:assert/strict';
import type { ScheduleDescription } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { DEFAULT_SEAL_GRACE_MS } from '../../activities/proof/epoch-sealer.js';
import { createSealActivities, type SealRunResult } from '../../activities/proof/seal-activities.js';
import {
  DEFAULT_SEAL_SCHEDULE_ID,
  SEAL_WORKFLOW_TYPE,
  sealScheduleDrift,
  sealScheduleOptions,
} from '../../activities/proof/seal-schedule.js';
import { DEFAULT_EPOCH_GENESIS_MS, EPOCH_MS, epochWindow } from '../../core/epoch.js';
import { ServiceError } from '../../core/errors.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import { checkSealChain } from '../../core/seal.js';
import type { ProofStore } from '../../store/proof-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { inferenceEntry } from '../helpers/proofs.js';

const GENESIS = DEFAULT_EPOCH_GENESIS_MS;
/** The instant the epoch before `epoch` is due: `epoch` has started and the grace has passed. */
const dueAt = (epoch: number) => epochWindow(epoch, GENESIS).start + DEFAULT_SEAL_GRACE_MS;

describe('sealEpoch activities', () => {
  let db: SqliteDatabase;
  let store: ProofStore;
  let node: KeyPair;
  let now: number;
  const activities = () =>
    createSealActivities({ store, signer: node, clock: () => now, genesisMs: GENESIS, graceMs: DEFAULT_SEAL_GRACE_MS });

  beforeEach(() => {
    db = openSqlite(':memory:');
    store = createSqliteProofStore(db);
    node = generateKeyPair();
  });
  afterEach(async () => {
    await store.close();
    db.close();
  });

  it('seals every due epoch of the store, reporting epochs and roots, and nothing on a second call', async () => {
    await store.appendRecords(node, [inferenceEntry('a', 3), inferenceEntry('b', 3), inferenceEntry('c', 5)]);
    now = dueAt(7);
    const env = new MockActivityEnvironment();
    const { sealDueEpochs } = activities();

    const first = await env.run(sealDueEpochs);
    const stored = await store.sealsOf(node.publicKey);
    assert.deepEqual(first, {
      sealerPk: node.publicKey,
      sealed: [3, 4, 5, 6],
      roots: stored.map((seal) => seal.merkle_root),
    });
    assert.deepEqual(
      stored.map((seal) => [seal.epoch, seal.record_count]),
      [
        [3, 2],
        [4, 0],
        [5, 1],
        [6, 0],
      ],
    );
    assert.deepEqual(checkSealChain(stored), []);

    // A retry, or the next hourly run before another epoch is due: nothing to do, nothing written.
    assert.deepEqual(await env.run(sealDueEpochs), { sealerPk: node.publicKey, sealed: [], roots: [] });
    assert.equal((await store.sealsOf(node.publicKey)).length, 4);
  });

  it('continues the chain an hour later with the one newly due epoch', async () => {
    await store.appendRecords(node, [inferenceEntry('a', 3)]);
    now = dueAt(5);
    const env = new MockActivityEnvironment();
    const { sealDueEpochs } = activities();
    const sealedNow = async () => ((await env.run(sealDueEpochs)) as SealRunResult).sealed;
    assert.deepEqual(await sealedNow(), [3, 4]);
    now = dueAt(5) + EPOCH_MS;
    assert.deepEqual(await sealedNow(), [5]);
    assert.deepEqual(checkSealChain(await store.sealsOf(node.publicKey)), []);
  });

  it('heartbeats while it runs', async () => {
    now = dueAt(1);
    const env = new MockActivityEnvironment();
    let beats = 0;
    env.on('heartbeat', () => beats++);
    await env.run(activities().sealDueEpochs);
    assert.ok(beats >= 1);
  });

  it('fails non-retryably on invalid_seal and retryably on other store refusals', async () => {
    await store.appendRecords(node, [inferenceEntry('a', 3)]);
    now = dueAt(5);
    const refusing = (code: 'invalid_seal' | 'seal_mismatch'): ProofStore => ({
      ...store,
      async sealEpoch() {
        throw new ServiceError(code, 'refused by the test');
      },
      async getSeal() {
        return null;
      },
    });
    const run = (code: 'invalid_seal' | 'seal_mismatch') =>
      // Its logger at ERROR: the activity's expected failure would log a warning.
      new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') }).run(
        createSealActivities({ store: refusing(code), signer: node, clock: () => now, genesisMs: GENESIS })
          .sealDueEpochs,
      );
    await assert.rejects(
      run('invalid_seal'),
      (error: unknown) => error instanceof ApplicationFailure && error.type === 'invalid_seal' && error.nonRetryable,
    );
    await assert.rejects(
      run('seal_mismatch'),
      (error: unknown) => error instanceof ApplicationFailure && error.type === 'seal_mismatch' && !error.nonRetryable,
    );
  });
});

describe('seal schedule options', () => {
  const HOUR = 3_600_000;

  it('starts sealEpoch every hour, 2 minutes after the epoch boundary, skipping overlaps', () => {
    const options = sealScheduleOptions({ taskQueue: 'geofabric/gateway' });
    assert.equal(options.scheduleId, DEFAULT_SEAL_SCHEDULE_ID);
    assert.deepEqual(options.spec, { intervals: [{ every: HOUR, offset: 2 * 60_000 }] });
    assert.equal(options.action.workflowType, SEAL_WORKFLOW_TYPE);
    assert.equal(options.action.taskQueue, 'geofabric/gateway');
    assert.equal(options.action.workflowId, DEFAULT_SEAL_SCHEDULE_ID);
    assert.deepEqual(options.policies, { overlap: 'SKIP', catchupWindow: 24 * HOUR, pauseOnFailure: false });
    assert.deepEqual(options.state, { paused: false });
  });

  it('follows a genesis off the whole hour and refuses offsets outside the hour', () => {
    const genesisMs = Date.UTC(2026, 0, 1, 0, 30);
    const options = sealScheduleOptions({ taskQueue: 'q', genesisMs, offsetMinutes: 45 });
    assert.deepEqual(options.spec.intervals, [{ every: HOUR, offset: 15 * 60_000 }]);
    assert.throws(() => sealScheduleOptions({ taskQueue: 'q', offsetMinutes: 60 }), RangeError);
    assert.throws(() => sealScheduleOptions({ taskQueue: 'q', offsetMinutes: -1 }), RangeError);
  });

  it('finds no drift in a schedule described as created, and names each field that differs', () => {
    const desired = sealScheduleOptions({ taskQueue: 'q', scheduleId: 'seal-test' });
    const described = (change: { taskQueue?: string; offset?: number; overlap?: 'SKIP' | 'ALLOW_ALL' } = {}) =>
      ({
        scheduleId: 'seal-test',
        spec: { intervals: [{ every: HOUR, offset: change.offset ?? 120_000 }], calendars: [], skip: [] },
        action: {
          type: 'startWorkflow',
          workflowType: 'sealEpoch',
          workflowId: 'seal-test',
          taskQueue: change.taskQueue ?? 'q',
          args: [],
          workflowExecutionTimeout: 55 * 60_000,
        },
        policies: { overlap: change.overlap ?? 'SKIP', catchupWindow: 24 * HOUR, pauseOnFailure: false },
        state: { paused: true },
      }) as unknown as ScheduleDescription;
    assert.deepEqual(sealScheduleDrift(described(), desired), []);
    assert.deepEqual(sealScheduleDrift(described({ taskQueue: 'other' }), desired), ['action.taskQueue']);
    assert.deepEqual(sealScheduleDrift(described({ offset: 300_000, overlap: 'ALLOW_ALL' }), desired), [
      'spec.intervals',
      'policies.overlap',
    ]);
  });
});
