import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createRequestVerifier } from '../../api/request-verifier.js';
import type { AsyncVerifier } from '../../core/gates/signature.js';
import { generateKeyPair, signMessage, verifySignature } from '../../core/identity.js';
import { createEd25519Pool, type Ed25519Pool } from '../../store/ed25519-pool.js';

const VECTORS = resolve(import.meta.dirname, '../fixtures/vectors/ed25519');

/** 40 checks of one turn, good and bad mixed: [pk, message, signature, expected]. */
function mixedChecks(): [string, string, string, boolean][] {
  const keys = [generateKeyPair(), generateKeyPair(), generateKeyPair()];
  return Array.from({ length: 40 }, (_, i) => {
    const key = keys[i % keys.length]!;
    const message = JSON.stringify({ n: i, text: 'Roma è bella' });
    const signature = signMessage(key.secretKey, message);
    switch (i % 4) {
      case 1: // signed by another key
        return [keys[(i + 1) % keys.length]!.publicKey, message, signature, false];
      case 2: // another message
        return [key.publicKey, `${message} `, signature, false];
      case 3: // S + L: the same curve equation, a malleated encoding
        return [key.publicKey, message, withSPlusL(signature), false];
      default:
        return [key.publicKey, message, signature, true];
    }
  });
}

type Checks = ReturnType<typeof mixedChecks>;

/** What each check should answer. */
const expected = (checks: Checks) => checks.map(([, , , ok]) => ok);

/** Every check asked of `verify` at once (one turn), answered in order. */
const answersOf = (verify: AsyncVerifier, checks: Checks) =>
  Promise.all(checks.map(([pk, message, signature]) => verify(pk, message, signature)));

/** A pool that verifies with `verify` and never signs. */
const poolVerifying = (verify: Ed25519Pool['verify']): Ed25519Pool => ({
  size: 1,
  sign: () => Promise.reject(new Error('unused')),
  verify,
  close: async () => undefined,
});

const L = 2n ** 252n + 27742317777372353535851937790883648493n;
function withSPlusL(signature: string): string {
  const s = BigInt(`0x${Buffer.from(signature.slice(64), 'hex').reverse().toString('hex')}`) + L;
  return signature.slice(0, 64) + Buffer.from(s.toString(16).padStart(64, '0'), 'hex').reverse().toString('hex');
}

describe('gate 1 verifier on its own worker threads (api/request-verifier.ts)', () => {
  let pool: Ed25519Pool;
  before(() => {
    pool = createEd25519Pool(1);
  });
  after(async () => {
    await pool.close();
  });

  it('answers every check of one turn, in order, as verifySignature does on the calling thread', async () => {
    const checks = mixedChecks();
    const answers = await answersOf(createRequestVerifier(pool), checks);
    assert.deepEqual(answers, expected(checks));
    assert.deepEqual(
      answers,
      checks.map(([pk, message, signature]) => verifySignature(pk, message, signature)),
    );
  });

  it('refuses the speccheck keys and scalars the policy refuses (small-order or non-canonical A, S ≥ L)', async () => {
    const verify = createRequestVerifier(pool);
    const cases = JSON.parse(readFileSync(resolve(VECTORS, 'speccheck-cases.json'), 'utf8')) as {
      message: string;
      pub_key: string;
      signature: string;
    }[];
    for (const i of [0, 1, 6, 7, 10, 11]) {
      const c = cases[i]!;
      assert.equal(await verify(c.pub_key, c.message, c.signature), false, `case ${i}`);
    }
    assert.equal(await verify('not a key', 'm', 'a'.repeat(128)), false);
    assert.equal(await verify(generateKeyPair().publicKey, 'm', 'A'.repeat(128)), false);
  });

  it("sends a turn's checks at its end in messages of at most eight, and answers each from its own", async () => {
    const sent: (readonly (readonly [string, string, string])[])[] = [];
    const verify = createRequestVerifier(
      poolVerifying((items) => {
        sent.push(items);
        return pool.verify(items);
      }),
    );
    const checks = mixedChecks();
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    const answers: Promise<boolean>[] = [];
    const ask = (part: typeof checks) => answers.push(...part.map(([pk, m, sig]) => verify(pk, m, sig)));
    ask(checks.slice(0, 5));
    assert.equal(sent.length, 0, 'nothing is sent before the turn ends');
    await turn();
    ask(checks.slice(5));
    assert.equal(sent.length, 1);
    await turn();
    // S ≥ L (every fourth check) is refused before any message: 4 of the first turn's 5, 26 of the second's 35.
    assert.deepEqual(
      sent.map((items) => items.length),
      [4, 8, 8, 8, 2],
    );
    assert.deepEqual(await Promise.all(answers), expected(checks));
  });

  it('gives the same answers on the libuv pool when its worker fails', async () => {
    const broken = poolVerifying(() => Promise.reject(new Error('ed25519 worker exited with code 1')));
    const checks = mixedChecks();
    assert.deepEqual(await answersOf(createRequestVerifier(broken), checks), expected(checks));
  });
});
