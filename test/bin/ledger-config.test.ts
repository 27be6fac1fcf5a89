/**
 * Settlement and anchoring settings: bin/config.ts's LEDGER … RELAY_FEE_PERCENT, bin/start.ts's
 * startLedger, and the sealers' anchoring hook (the embedded auto-sealer and the Temporal seal activity).
 */
import assert from 'node:assert/strict';
import { MockActivityEnvironment } from '@temporalio/testing';
import { pino } from 'pino';
import { startAutoSealer } from '../../activities/proof/epoch-sealer.js';
import { createSealActivities, type SealRunResult } from '../../activities/proof/seal-activities.js';
import { DEFAULT_SETTLEMENT_THRESHOLD_UNITS } from '../../activities/settlement/settlement-service.js';
import { ConfigError, DEFAULT_HORIZON_URL, loadConfig, TESTNET_PASSPHRASE } from '../../bin/config.js';
import { startLedger } from '../../bin/start.js';
import { fromCreditUnits } from '../../core/credits.js';
import { DEFAULT_EPOCH_GENESIS_MS, epochWindow } from '../../core/epoch.js';
import { generateKeyPair } from '../../core/identity.js';
import type { Seal } from '../../core/proof-types.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteJobStore } from '../../store/sqlite/job-store.js';
import { createSqliteLedgerStore } from '../../store/sqlite/ledger-store.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { createSqliteWorkerRegistry } from '../../store/sqlite/worker-registry.js';
import { inferenceEntry } from '../helpers/proofs.js';

// A valid account id (the issuer of an asset) and the same with its checksum broken.
const ISSUER = 'GDVEU3DD4KOFECV66VIHWEZOYX4ZKR3WV27L464SIIPOU2IUI3JCZA57';
const BAD_CHECKSUM = 'GDVEU3DD4KOFECV66VIHWEZOYX4ZKR3WV27L464SIIPOU2IUI3JCZA5A';

const refuses = (env: Record<string, string>, variable: string, detail?: RegExp) =>
  assert.throws(
    () => loadConfig(env),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError, String(error));
      assert.match(error.message, new RegExp(`^configuration: ${variable}`));
      if (detail) assert.match(error.message, detail);
      return true;
    },
  );

describe('settlement configuration', () => {
  it('defaults: ledger kept, nothing settled on any network, job mode, 20 % relay fee', () => {
    assert.deepEqual(loadConfig({}).ledger, {
      mode: 'none',
      horizonUrl: DEFAULT_HORIZON_URL,
      networkPassphrase: TESTNET_PASSPHRASE,
      asset: 'native',
      thresholdCredits: 0.01,
      settlementMode: 'job',
      sweepIntervalMs: 60_000,
      anchorEpochs: false,
      relayFeeShare: 0.2,
    });
    assert.equal(DEFAULT_HORIZON_URL, 'https://horizon-testnet.stellar.org');
    assert.equal(TESTNET_PASSPHRASE, 'Test SDF Network ; September 2015');
  });

  it('the default threshold equals the settlement service default', () => {
    assert.equal(loadConfig({}).ledger.thresholdCredits, fromCreditUnits(DEFAULT_SETTLEMENT_THRESHOLD_UNITS));
  });

  it('takes every variable', () => {
    const ledger = loadConfig({
      LEDGER: 'stellar',
      HORIZON_URL: 'https://horizon.stellar.org/',
      STELLAR_NETWORK_PASSPHRASE: 'Public Global Stellar Network ; September 2015',
      SETTLEMENT_ASSET: `GEO:${ISSUER}`,
      SETTLEMENT_THRESHOLD: '2.5',
      SETTLEMENT_MODE: 'balance',
      SETTLEMENT_INTERVAL_SECONDS: '300',
      ANCHOR_EPOCHS: 'true',
      RELAY_FEE_PERCENT: '12.5',
    }).ledger;
    assert.deepEqual(ledger, {
      mode: 'stellar',
      horizonUrl: 'https://horizon.stellar.org',
      networkPassphrase: 'Public Global Stellar Network ; September 2015',
      asset: `GEO:${ISSUER}`,
      thresholdCredits: 2.5,
      settlementMode: 'balance',
      sweepIntervalMs: 300_000,
      anchorEpochs: true,
      relayFeeShare: 0.125,
    });
    assert.equal(loadConfig({ RELAY_FEE_PERCENT: '0' }).ledger.relayFeeShare, 0);
    assert.equal(loadConfig({ RELAY_FEE_PERCENT: '100' }).ledger.relayFeeShare, 1);
  });

  it('refuses invalid values, naming the variable', () => {
    refuses({ LEDGER: 'ethereum' }, 'LEDGER');
    refuses({ HORIZON_URL: 'horizon' }, 'HORIZON_URL');
    refuses({ STELLAR_NETWORK_PASSPHRASE: '' }, 'STELLAR_NETWORK_PASSPHRASE');
    refuses({ SETTLEMENT_ASSET: 'XLM' }, 'SETTLEMENT_ASSET');
    refuses({ SETTLEMENT_ASSET: 'GEO' }, 'SETTLEMENT_ASSET');
    refuses({ SETTLEMENT_ASSET: `TOOLONGASSETCODE:${ISSUER}` }, 'SETTLEMENT_ASSET');
    refuses({ SETTLEMENT_ASSET: 'GEO:SBADISSUER' }, 'SETTLEMENT_ASSET');
    refuses({ SETTLEMENT_THRESHOLD: '-1' }, 'SETTLEMENT_THRESHOLD');
    refuses({ SETTLEMENT_THRESHOLD: 'lots' }, 'SETTLEMENT_THRESHOLD');
    refuses({ SETTLEMENT_MODE: 'monthly' }, 'SETTLEMENT_MODE');
    refuses({ SETTLEMENT_INTERVAL_SECONDS: '0' }, 'SETTLEMENT_INTERVAL_SECONDS');
    refuses({ ANCHOR_EPOCHS: 'maybe' }, 'ANCHOR_EPOCHS');
    refuses({ RELAY_FEE_PERCENT: '101' }, 'RELAY_FEE_PERCENT');
    refuses({ RELAY_FEE_PERCENT: '-5' }, 'RELAY_FEE_PERCENT');
  });

  it('ANCHOR_EPOCHS needs LEDGER=stellar', () => {
    refuses({ ANCHOR_EPOCHS: 'true' }, 'ANCHOR_EPOCHS', /needs LEDGER=stellar/);
    assert.equal(loadConfig({ ANCHOR_EPOCHS: 'true', LEDGER: 'stellar' }).ledger.anchorEpochs, true);
  });
});

describe('startLedger (bin/start.ts) and the sealers hook', () => {
  const db = openSqlite(':memory:');
  const stores = {
    ledger: createSqliteLedgerStore(db),
    jobs: createSqliteJobStore(db),
    workers: createSqliteWorkerRegistry(db),
    proofs: createSqliteProofStore(db),
  };
  const logger = pino({ level: 'silent' });
  after(() => db.close());

  it('LEDGER=none: no hooks (entries are still posted by finishJob), nothing to stop', async () => {
    const hooks = startLedger(loadConfig({}), { stores, signer: generateKeyPair(), logger });
    assert.equal(hooks.onJobPosted, undefined);
    assert.equal(hooks.onSealed, undefined);
    await hooks.stop();
  });

  it('LEDGER=stellar: settles jobs, anchors only with ANCHOR_EPOCHS', async () => {
    const env = { LEDGER: 'stellar', HORIZON_URL: 'http://127.0.0.1:9' };
    const plain = startLedger(loadConfig(env), { stores, signer: generateKeyPair(), logger });
    assert.equal(typeof plain.onJobPosted, 'function');
    assert.equal(plain.onSealed, undefined);
    await plain.stop();
    const anchoring = startLedger(loadConfig({ ...env, ANCHOR_EPOCHS: 'true' }), {
      stores,
      signer: generateKeyPair(),
      logger,
    });
    assert.equal(typeof anchoring.onSealed, 'function');
    await anchoring.stop();
  });

  it('refuses an asset issuer whose checksum is wrong before anything starts', () => {
    const config = loadConfig({ LEDGER: 'stellar', SETTLEMENT_ASSET: `GEO:${BAD_CHECKSUM}` });
    assert.throws(
      () => startLedger(config, { stores, signer: generateKeyPair(), logger }),
      (error: unknown) => error instanceof ConfigError && /^configuration: SETTLEMENT_ASSET/.test(error.message),
    );
  });

  it('the Temporal seal activity hands the seals it made to onSealed, and a failing hook never fails the seal', async () => {
    const proofs = createSqliteProofStore(db);
    const node = generateKeyPair();
    await proofs.appendRecords(node, [inferenceEntry('a', 3), inferenceEntry('b', 4)]);
    const handed: Seal[][] = [];
    const now = epochWindow(5).start + 61_000;
    const activities = (onSealed: (seals: Seal[]) => Promise<void>) =>
      createSealActivities({
        store: proofs,
        signer: node,
        clock: () => now,
        genesisMs: DEFAULT_EPOCH_GENESIS_MS,
        onSealed,
      });
    const first: SealRunResult = await new MockActivityEnvironment().run(
      activities(async (seals) => {
        handed.push(seals);
        throw new Error('horizon down');
      }).sealDueEpochs,
    );
    assert.deepEqual(first.sealed, [3, 4]);
    assert.deepEqual(
      handed.map((seals) => seals.map((s) => [s.epoch, s.merkle_root])),
      [
        [
          [3, first.roots[0]],
          [4, first.roots[1]],
        ],
      ],
    );
    // Nothing new to seal: the hook is not called.
    await new MockActivityEnvironment().run(activities(async (seals) => void handed.push(seals)).sealDueEpochs);
    assert.equal(handed.length, 1);
  });

  it('the embedded auto-sealer hands the new seals of each run to onSealed; its failure goes to onError', async () => {
    const proofs = createSqliteProofStore(db);
    const node = generateKeyPair();
    await proofs.appendRecords(node, [inferenceEntry('c', 8)]);
    const handed: number[][] = [];
    const errors: unknown[] = [];
    let now = epochWindow(9).start + 61_000;
    const sealer = startAutoSealer({
      store: proofs,
      signer: node,
      clock: () => now,
      genesisMs: DEFAULT_EPOCH_GENESIS_MS,
      intervalMs: 5,
      onError: (error) => errors.push(error),
      onSealed: async (seals) => {
        handed.push(seals.map((s) => s.epoch));
        throw new Error('horizon down');
      },
    });
    const until = Date.now() + 2000;
    while (handed.length < 1 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 5));
    now = epochWindow(10).start + 61_000;
    while (handed.length < 2 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 5));
    await sealer.stop();
    assert.deepEqual(handed, [[8], [9]], 'each run hands over only the seals it made');
    assert.equal(errors.length, 2);
    assert.deepEqual(
      (await proofs.sealsOf(node.publicKey)).map((s) => s.epoch),
      [8, 9],
      'the seals stand',
    );
  });
});
