/**
 * recomputeReceipt (docs/protocol.md §15.4) on the conformance vectors: inference steps are not recomputable and
 * show what their records bind; a receipt that fails the offline checks fetches nothing.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { recomputeLine, recomputeReceipt } from '../src/index.js';

const FIXTURES = join(import.meta.dirname, '../../../test/fixtures/conformance');
const load = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(join(FIXTURES, name), 'utf8')) as Record<string, unknown>;

describe('recomputeReceipt', () => {
  const refusing = (): typeof fetch => async () => {
    throw new Error('nothing may be fetched');
  };

  it('says an inference step is not recomputable and shows its model, provider and hashes', async () => {
    const { verdict, steps } = await recomputeReceipt(load('receipt-valid.json'), { fetch: refusing() });
    assert.equal(verdict.ok, true);
    assert.deepEqual(
      steps!.map((s) => [s.step_id, s.kind]),
      [
        ['ask', 'not_recomputable'],
        ['pick', 'not_recomputable'],
      ],
    );
    assert.deepEqual(Object.keys(steps![0]!.bound!).slice(0, 2), ['model', 'provider']);
    assert.match(
      recomputeLine(steps![0]!),
      /^ask \(inference\): not recomputable \(a model's answer is not a function of public inputs; bound: model \S+, provider \S+, worker_pk [0-9a-f]{12}…, prompt_sha256 [0-9a-f]{12}…, answer_sha256 [0-9a-f]{12}…/,
    );
  });

  it('fetches nothing and recomputes nothing when the receipt does not verify', async () => {
    const receipt = load('receipt-valid.json');
    (receipt.job as { status: string }).status = 'failed';
    let calls = 0;
    const { verdict, steps } = await recomputeReceipt(receipt, {
      fetch: async () => {
        calls++;
        throw new Error('unexpected');
      },
    });
    assert.equal(verdict.ok, false);
    assert.equal(steps, null);
    assert.equal(calls, 0);
  });
});
