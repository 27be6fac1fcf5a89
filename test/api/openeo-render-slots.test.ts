/**
 * The bound on XYZ tile renders (api/openeo/services.ts renderSlots, docs/protocol.md §16.10): a few at once, more
 * waiting their turn in order, and beyond the queue openEO's InfrastructureBusy (503) with retry-after.
 */
import assert from 'node:assert/strict';
import { OpenEoError } from '../../core/openeo/errors.js';
import { renderSlots } from '../../api/openeo/services.js';

describe('XYZ tile render slots', () => {
  it('runs one at a time with one waiting, refuses a third, and hands the slot on in order', async () => {
    const slot = renderSlots(1, 1);
    const order: string[] = [];
    let release!: () => void;
    const first = slot(
      () =>
        new Promise<string>((resolve) => {
          order.push('first started');
          release = () => resolve('first');
        }),
    );
    const second = slot(async () => {
      order.push('second started');
      return 'second';
    });
    await assert.rejects(
      slot(async () => 'third'),
      (error: unknown) =>
        error instanceof OpenEoError &&
        error.openEoCode === 'InfrastructureBusy' &&
        error.openEoStatus === 503 &&
        error.headers['retry-after'] === '2',
    );
    await Promise.resolve();
    assert.deepEqual(order, ['first started']);
    release();
    assert.deepEqual(await Promise.all([first, second]), ['first', 'second']);
    assert.deepEqual(order, ['first started', 'second started']);
    // The slot is free again.
    assert.equal(await slot(async () => 'fourth'), 'fourth');
  });
});
