import assert from 'node:assert/strict';
import {
  Account,
  Asset,
  Keypair,
  Memo,
  Networks,
  Operation,
  StrKey,
  TimeoutInfinite,
  TransactionBuilder,
} from '@stellar/stellar-sdk';
import { generateKeyPair, signMessage } from '../../../core/identity.js';
import { sha256Hex } from '../../../core/hash.js';
import { createHorizonClient, HorizonError } from '../../../activities/settlement/horizon.js';
import {
  parseAsset,
  publicKeyOfAddress,
  stellarAddress,
  stellarKeypair,
} from '../../../activities/settlement/stellar-keys.js';
import { startFakeHorizon, type FakeHorizon } from '../../helpers/fake-horizon.js';

describe('Stellar keys', () => {
  it('derives the G… address from the Ed25519 key and back', () => {
    const pair = generateKeyPair();
    const address = stellarAddress(pair.publicKey);
    assert.match(address, /^G[A-Z2-7]{55}$/);
    assert.ok(StrKey.isValidEd25519PublicKey(address));
    assert.equal(publicKeyOfAddress(address), pair.publicKey);
    assert.equal(publicKeyOfAddress('not an address'), null);
    assert.throws(() => stellarAddress('ABC'), TypeError);
  });

  it('signs with the same key: a Stellar signature equals our Ed25519 signature', () => {
    const pair = generateKeyPair();
    const keypair = stellarKeypair(pair);
    assert.equal(keypair.publicKey(), stellarAddress(pair.publicKey));
    const message = Buffer.from('geofabric');
    assert.equal(Buffer.from(keypair.sign(message)).toString('hex'), signMessage(pair.secretKey, message));
    assert.throws(
      () => stellarKeypair({ publicKey: generateKeyPair().publicKey, secretKey: pair.secretKey }),
      TypeError,
    );
  });

  it('parses the settlement asset: native or CODE:ISSUER', () => {
    assert.ok(parseAsset('native').isNative());
    const issuer = Keypair.random().publicKey();
    const asset = parseAsset(`GEOC:${issuer}`);
    assert.equal(asset.getCode(), 'GEOC');
    assert.equal(asset.getIssuer(), issuer);
    assert.throws(() => parseAsset('GEOC:nope'), RangeError);
  });
});

describe('fake Horizon validates envelopes, and the Horizon client reads it', () => {
  let fake: FakeHorizon;
  const payer = Keypair.random();
  const payee = Keypair.random().publicKey();
  beforeEach(async () => {
    fake = await startFakeHorizon();
    fake.addAccount(payer.publicKey(), 500n);
  });
  afterEach(async () => {
    await fake.close();
  });

  const envelope = (
    options: {
      sequence?: string;
      signer?: Keypair;
      passphrase?: string;
      memo?: Memo;
      asset?: Asset;
      amount?: string;
    } = {},
  ) => {
    const tx = new TransactionBuilder(new Account(payer.publicKey(), options.sequence ?? '500'), {
      fee: '100',
      networkPassphrase: options.passphrase ?? Networks.TESTNET,
    })
      .addOperation(
        Operation.payment({
          destination: payee,
          asset: options.asset ?? Asset.native(),
          amount: options.amount ?? '1.5',
        }),
      )
      .addMemo(options.memo ?? Memo.hash(sha256Hex('memo')))
      .setTimeout(TimeoutInfinite)
      .build();
    tx.sign(options.signer ?? payer);
    return tx;
  };

  const client = () => createHorizonClient({ url: fake.url, timeoutMs: 2000 });

  const refusal = async (xdr: string): Promise<string | undefined> => {
    try {
      await client().submit(xdr);
      return undefined;
    } catch (error) {
      assert.ok(error instanceof HorizonError);
      assert.equal(error.transient, false);
      return error.resultCodes?.transaction;
    }
  };

  it('accepts a valid payment, then refuses the reused sequence with tx_bad_seq', async () => {
    const tx = envelope();
    const h = client();
    assert.equal(await h.accountSequence(payer.publicKey()), '500');
    const result = await h.submit(tx.toXDR());
    assert.equal(result.hash, tx.hash().toString('hex'));
    assert.equal(await h.accountSequence(payer.publicKey()), '501');
    assert.deepEqual(
      fake.payments().map((p) => [p.from, p.to, p.amount, p.asset, p.memo_hex]),
      [[payer.publicKey(), payee, '1.5000000', 'native', sha256Hex('memo')]],
    );
    assert.equal(await refusal(tx.toXDR()), 'tx_bad_seq');
    assert.equal(await refusal(envelope({ amount: '2' }).toXDR()), 'tx_bad_seq');

    const found = await h.transaction(result.hash);
    assert.equal(found?.ledger, result.ledger);
    assert.equal(found?.memo, Buffer.from(sha256Hex('memo'), 'hex').toString('base64'));
    assert.equal(await h.transaction(sha256Hex('unknown')), null);
    assert.equal((await h.findByMemoHash(payer.publicKey(), sha256Hex('memo')))?.hash, result.hash);
    assert.equal(await h.findByMemoHash(payer.publicKey(), sha256Hex('other')), null);
    const ops = await h.operations(result.hash);
    assert.equal(ops?.[0]?.type, 'payment');
    assert.equal(ops?.[0]?.to, payee);
    assert.equal(ops?.[0]?.amount, '1.5000000');
  });

  it('refuses a signature by another key, a wrong network passphrase, a missing memo and a foreign asset', async () => {
    assert.equal(await refusal(envelope({ signer: Keypair.random() }).toXDR()), 'tx_bad_auth');
    assert.equal(await refusal(envelope({ passphrase: Networks.PUBLIC }).toXDR()), 'tx_bad_auth');
    assert.equal(await refusal(envelope({ memo: Memo.none() }).toXDR()), 'tx_memo_required');
    assert.equal(await refusal(envelope({ memo: Memo.text('hi') }).toXDR()), 'tx_memo_required');
    const foreign = new Asset('GEOC', Keypair.random().publicKey());
    assert.equal(await refusal(envelope({ asset: foreign }).toXDR()), 'tx_failed');
    assert.equal(await refusal(envelope({ sequence: '502' }).toXDR()), 'tx_bad_seq'); // from the future
    assert.equal(fake.transactions().length, 0);
    assert.equal(fake.sequenceOf(payer.publicKey()), 500n);
  });

  it('pages an account’s transactions newest first and finds an older memo on a later page', async () => {
    const h = client();
    for (let i = 0; i < 5; i++) {
      await h.submit(envelope({ sequence: String(500 + i), memo: Memo.hash(sha256Hex(`m${i}`)) }).toXDR());
    }
    const first = await h.accountTransactions(payer.publicKey(), { limit: 2 });
    assert.equal(first.records.length, 2);
    assert.equal(first.records[0]?.memo, Buffer.from(sha256Hex('m4'), 'hex').toString('base64'));
    const second = await h.accountTransactions(payer.publicKey(), { limit: 2, cursor: first.next! });
    assert.equal(second.records[0]?.memo, Buffer.from(sha256Hex('m2'), 'hex').toString('base64'));
    assert.ok(await h.findByMemoHash(payer.publicKey(), sha256Hex('m0'), 5));
    assert.equal(await h.findByMemoHash(payer.publicKey(), sha256Hex('m0'), 3), null); // beyond the search depth
  });

  it('reports 503 as transient and a lost response as a transient network error', async () => {
    fake.failNextSubmits(1, 503);
    const h = client();
    await assert.rejects(
      h.submit(envelope().toXDR()),
      (e: unknown) => e instanceof HorizonError && e.status === 503 && e.transient,
    );
    fake.loseNextResponses(1);
    await assert.rejects(
      h.submit(envelope().toXDR()),
      (e: unknown) => e instanceof HorizonError && e.status === 0 && e.transient,
    );
    assert.equal(fake.transactions().length, 1); // the lost one was applied
  });

  it('times out a Horizon that does not answer', async () => {
    const { createServer } = await import('node:http');
    const silent = createServer(() => undefined);
    silent.listen(0, '127.0.0.1');
    await new Promise((resolve) => silent.once('listening', resolve));
    const port = (silent.address() as { port: number }).port;
    try {
      const h = createHorizonClient({ url: `http://127.0.0.1:${port}`, timeoutMs: 100 });
      await assert.rejects(
        h.transaction(sha256Hex('x')),
        (e: unknown) => e instanceof HorizonError && /timed out/.test(e.message),
      );
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });
});
