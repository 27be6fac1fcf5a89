import assert from 'node:assert/strict';
import { generateKeyPair } from '../../../core/identity.js';
import { sha256Hex } from '../../../core/hash.js';
import { GENESIS_PREV_HASH, type Seal } from '../../../core/proof-types.js';
import { createSeal } from '../../../core/seal.js';
import { ServiceError } from '../../../core/errors.js';
import {
  anchorView,
  CATCH_UP_SEALS,
  createEpochAnchorer,
  verifyAnchorOnHorizon,
  type EpochAnchorerDeps,
} from '../../../activities/settlement/epoch-anchorer.js';
import { stellarAddress } from '../../../activities/settlement/stellar-keys.js';
import { createHorizonClient } from '../../../activities/settlement/horizon.js';
import { FAST_RETRY, recordingLogger, stage, T0, type Stage } from '../../helpers/settlement-fixtures.js';

describe('epoch anchorer (manage_data epoch:<n> on the fake Horizon)', () => {
  let s: Stage;
  beforeEach(async () => {
    s = await stage();
  });
  afterEach(async () => {
    await s.close();
  });

  const anchorer = (overrides: Partial<EpochAnchorerDeps> = {}) =>
    createEpochAnchorer({
      ledger: s.ledger,
      horizon: s.horizon,
      signer: s.platform,
      clock: () => T0,
      logger: recordingLogger(),
      retry: FAST_RETRY,
      sleep: async () => undefined,
      ...overrides,
    });

  const sealOf = (epoch: number, records: string[], prev = GENESIS_PREV_HASH): Seal =>
    createSeal(s.platform.secretKey, {
      epoch,
      records: records.map((r, i) => ({ seq: i + 1, record_hash: sha256Hex(r) })),
      prevSealHash: prev,
      sealedAt: new Date(T0).toISOString(),
    });

  it('writes one manage_data op epoch:<n> holding the 32 raw root bytes, from the signer account', async () => {
    const seal = sealOf(7, ['a', 'b', 'c']);
    const anchor = await anchorer().anchor(seal);
    assert.equal(anchor.status, 'submitted');
    const txs = s.fake.transactions();
    assert.equal(txs.length, 1);
    assert.equal(txs[0]!.source_account, stellarAddress(s.platform.publicKey));
    assert.deepEqual(txs[0]!.operations, [
      {
        type: 'manage_data',
        source_account: stellarAddress(s.platform.publicKey),
        name: 'epoch:7',
        value_hex: seal.merkle_root,
      },
    ]);
    assert.equal(anchor.tx_hash, txs[0]!.hash);
    assert.equal(anchor.ledger, txs[0]!.ledger);
    const stored = await s.ledger.anchor(s.platform.publicKey, 7);
    assert.equal(stored?.status, 'submitted');
    assert.equal(stored?.root, seal.merkle_root);
    assert.deepEqual(anchorView(stored), { tx_hash: txs[0]!.hash, ledger: txs[0]!.ledger });
  });

  it('anchoring the same seal twice submits once', async () => {
    const seal = sealOf(8, ['x']);
    const a = anchorer();
    const first = await a.anchor(seal);
    const [second, third] = await Promise.all([a.anchor(seal), anchorer().anchor({ ...seal })]);
    assert.equal(second.tx_hash, first.tx_hash);
    assert.equal(third.tx_hash, first.tx_hash);
    assert.equal(s.fake.submissions().length, 1);
  });

  it('refuses another root for an anchored epoch', async () => {
    await anchorer().anchor(sealOf(9, ['x']));
    await assert.rejects(
      anchorer().anchor(sealOf(9, ['y'])),
      (error: unknown) => error instanceof ServiceError && error.code === 'record_conflict',
    );
    assert.equal(s.fake.submissions().length, 1);
  });

  it('onSealed anchors every seal of a sealer run, in order, and tells apart empty epochs with equal roots', async () => {
    const e1 = sealOf(1, []);
    const e2 = sealOf(2, [], e1.seal_hash);
    assert.equal(e1.merkle_root, e2.merkle_root);
    await anchorer().onSealed([e1, e2]);
    const txs = s.fake.transactions();
    assert.deepEqual(
      txs.map((t) => t.operations[0]!.name),
      ['epoch:1', 'epoch:2'],
    );
    assert.notEqual(txs[0]!.memo, txs[1]!.memo);
  });

  describe('anchorMissing (seals a crash kept from onSealed)', () => {
    const chain = (epochs: number[]): Seal[] => {
      const out: Seal[] = [];
      for (const epoch of epochs) out.push(sealOf(epoch, [`r${epoch}`], out.at(-1)?.seal_hash ?? GENESIS_PREV_HASH));
      return out;
    };
    const source = (seals: Seal[]) => ({
      latest: async () => seals.reduce<Seal | null>((a, b) => (a === null || b.epoch > a.epoch ? b : a), null),
      all: async () => [...seals].reverse(),
    });

    it('anchors, oldest first, the newest seals back to the first anchored one, then nothing more', async () => {
      const seals = chain([1, 2, 3, 4, 5]);
      const a = anchorer();
      await a.onSealed(seals.slice(0, 2)); // the process handed 1 and 2 over, then died after sealing 3..5
      assert.equal(await a.anchorMissing(source(seals)), 3);
      assert.deepEqual(
        s.fake.transactions().map((t) => t.operations[0]!.name),
        ['epoch:1', 'epoch:2', 'epoch:3', 'epoch:4', 'epoch:5'],
      );
      assert.equal(await a.anchorMissing(source(seals)), 0);
      assert.equal(s.fake.transactions().length, 5);
    });

    it('looks back at most CATCH_UP_SEALS seals, and does nothing without seals', async () => {
      const seals = chain(Array.from({ length: CATCH_UP_SEALS + 5 }, (_, i) => i + 1));
      const a = anchorer();
      assert.equal(await a.anchorMissing(source([])), 0);
      assert.equal(await a.anchorMissing(source(seals)), CATCH_UP_SEALS);
      assert.equal(s.fake.transactions()[0]!.operations[0]!.name, 'epoch:6');
    });

    it('never throws: a failing seal source is logged', async () => {
      const logger = recordingLogger();
      const a = anchorer({ logger });
      const broken = { latest: () => Promise.reject(new Error('store gone')), all: async () => [] };
      assert.equal(await a.anchorMissing(broken), 0);
      assert.ok(logger.lines.some((l) => l.msg === 'anchor catch-up failed'));
    });
  });

  it('onSealed never throws; a failed anchor is re-driven by retryOpen with the same envelope', async () => {
    s.fake.failNextSubmits(10, 503);
    const a = anchorer({ retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 } });
    await a.onSealed([sealOf(3, ['r'])]);
    const failed = await s.ledger.anchor(s.platform.publicKey, 3);
    assert.equal(failed?.status, 'failed');
    assert.equal(anchorView(failed), null);
    s.fake.failNextSubmits(0);
    const [retried] = await a.retryOpen();
    assert.equal(retried?.status, 'submitted');
    assert.equal(retried?.tx_hash, failed?.tx_hash);
    assert.equal(s.fake.transactions().length, 1);
  });

  it('a lost response: the anchor is found by hash, not written twice', async () => {
    s.fake.loseNextResponses(1);
    const anchor = await anchorer().anchor(sealOf(4, ['q']));
    assert.equal(anchor.status, 'submitted');
    assert.equal(s.fake.submissions().length, 1);
    assert.equal(s.fake.transactions().length, 1);
  });

  describe('verifyAnchorOnHorizon', () => {
    it('is ok for the anchored root and not ok for a different root, epoch, source or transaction', async () => {
      const seal = sealOf(11, ['a', 'b']);
      const anchor = await anchorer().anchor(seal);
      const base = { horizon: s.horizon, txHash: anchor.tx_hash!, epoch: 11, root: seal.merkle_root };

      const ok = await verifyAnchorOnHorizon({ ...base, sourcePk: s.platform.publicKey });
      assert.equal(ok.ok, true, ok.detail);
      assert.equal(ok.ledger, anchor.ledger);

      const otherRoot = await verifyAnchorOnHorizon({ ...base, root: sha256Hex('another root') });
      assert.equal(otherRoot.ok, false);
      assert.match(otherRoot.detail, /different root/);

      assert.equal((await verifyAnchorOnHorizon({ ...base, epoch: 12 })).ok, false);
      const otherSource = await verifyAnchorOnHorizon({ ...base, sourcePk: generateKeyPair().publicKey });
      assert.equal(otherSource.ok, false);
      assert.match(otherSource.detail, /not written by/);
      const missing = await verifyAnchorOnHorizon({ ...base, txHash: sha256Hex('nope') });
      assert.equal(missing.ok, false);
      assert.match(missing.detail, /not found/);
    });

    it('reports an unreachable Horizon as not ok', async () => {
      const seal = sealOf(12, ['a']);
      const anchor = await anchorer().anchor(seal);
      const down = createHorizonClient({ url: 'http://127.0.0.1:9', timeoutMs: 500 });
      const result = await verifyAnchorOnHorizon({
        horizon: down,
        txHash: anchor.tx_hash!,
        epoch: 12,
        root: seal.merkle_root,
      });
      assert.equal(result.ok, false);
      assert.match(result.detail, /horizon/);
    });
  });
});
