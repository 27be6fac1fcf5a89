/**
 * Ed25519 on worker threads: a proof append signs every record and a cold audit report verifies every block,
 * and either would hold the event loop (one core) for seconds. The pool spreads a batch over one worker per
 * core, so the signatures run on the other cores while the caller's thread hashes and inserts.
 *
 * The workers run node:crypto (OpenSSL) only, from source evaluated here, so they start in a few ms with no
 * TypeScript loader; they are unref'd and never keep a process alive. Results are exactly what
 * `signMessage` / node:crypto `verify` give on the calling thread: callers keep the verification policy's
 * key and S checks (core/identity.ts) and hand the pool only the OpenSSL part.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { holdsWithSmallOrderR, passesSignaturePolicy } from '../core/identity.js';

const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { createPrivateKey, createPublicKey, sign, verify } = require('node:crypto');
const PKCS8 = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI = Buffer.from('302a300506032b6570032100', 'hex');
const privateKeys = new Map();
const publicKeys = new Map();
function privateKey(seed) {
  let key = privateKeys.get(seed);
  if (key === undefined) {
    if (privateKeys.size > 64) privateKeys.clear();
    key = createPrivateKey({ key: Buffer.concat([PKCS8, Buffer.from(seed, 'hex')]), format: 'der', type: 'pkcs8' });
    privateKeys.set(seed, key);
  }
  return key;
}
function publicKey(pk) {
  let key = publicKeys.get(pk);
  if (key === undefined) {
    if (publicKeys.size > 10000) publicKeys.clear();
    key = createPublicKey({ key: Buffer.concat([SPKI, Buffer.from(pk, 'hex')]), format: 'der', type: 'spki' });
    publicKeys.set(pk, key);
  }
  return key;
}
// S < L (canonical, so not malleable), as core/identity.ts verifySignature requires before OpenSSL's check.
const L = (1n << 252n) + 27742317777372353535851937790883648493n;
function canonicalS(sig) {
  if (sig.length !== 64) return false;
  const top = sig[63];
  if (top !== 0x10) return top < 0x10;
  return BigInt('0x' + Buffer.from(sig.subarray(32)).reverse().toString('hex')) < L;
}
parentPort.on('message', (job) => {
  try {
    if (job.kind === 'sign') {
      const key = privateKey(job.seed);
      const out = new Array(job.messages.length);
      for (let i = 0; i < out.length; i++) out[i] = sign(null, Buffer.from(job.messages[i]), key).toString('hex');
      parentPort.postMessage({ id: job.id, out });
    } else {
      const out = new Array(job.items.length);
      for (let i = 0; i < out.length; i++) {
        const [pk, message, signature] = job.items[i];
        try {
          const sig = Buffer.from(signature, 'hex');
          out[i] = canonicalS(sig) && verify(null, Buffer.from(message), publicKey(pk), sig);
        } catch {
          out[i] = false;
        }
      }
      parentPort.postMessage({ id: job.id, out });
    }
  } catch (error) {
    parentPort.postMessage({ id: job.id, error: String(error && error.message || error) });
  }
});
`;

interface Pending {
  resolve: (out: unknown[]) => void;
  reject: (error: Error) => void;
}

interface PoolWorker {
  worker: Worker;
  busy: number;
}

export interface Ed25519Pool {
  /** Workers in the pool (≥ 1). */
  readonly size: number;
  /** Signatures (128 hex) of the UTF-8 of each message under the 64-hex seed, in order. */
  sign(seedHex: string, messages: readonly string[]): Promise<string[]>;
  /**
   * node:crypto `verify` of each [pk hex, UTF-8 message, signature hex] after the S < L check; false where it
   * throws. The key checks of core/identity.ts (canonical, not small order) are the caller's, once per key.
   */
  verify(items: readonly (readonly [string, string, string])[]): Promise<boolean[]>;
  close(): Promise<void>;
}

/** Messages per job: small enough to spread a batch over every worker, large enough to amortize a message. */
const CHUNK = 256;

export function createEd25519Pool(size = Math.max(1, availableParallelism())): Ed25519Pool {
  const workers: PoolWorker[] = [];
  const pending = new Map<number, Pending>();
  let nextId = 1;

  function spawn(): PoolWorker {
    // No execArgv: the parent's loaders (tsx in development) are not needed by plain JavaScript.
    const worker = new Worker(WORKER_SOURCE, { eval: true, execArgv: [] });
    const entry: PoolWorker = { worker, busy: 0 };
    worker.on('message', (msg: { id: number; out?: unknown[]; error?: string }) => {
      const job = pending.get(msg.id);
      if (job === undefined) return;
      pending.delete(msg.id);
      if (--entry.busy === 0) worker.unref();
      if (msg.error !== undefined) job.reject(new Error(`ed25519 worker: ${msg.error}`));
      else job.resolve(msg.out ?? []);
    });
    worker.on('error', (error) => fail(entry, error));
    worker.on('exit', (code) => fail(entry, new Error(`ed25519 worker exited with code ${code}`)));
    // Referenced only while it has jobs (listeners ref it, so this comes after them): an idle pool never keeps
    // the process alive, a busy one does until its results are in.
    worker.unref();
    return entry;
  }

  // A dead worker fails its jobs (the caller retries or reports) and is replaced on next use.
  function fail(entry: PoolWorker, error: Error): void {
    const index = workers.indexOf(entry);
    if (index >= 0) workers.splice(index, 1);
    for (const [id, job] of pending) {
      if ((job as Pending & { owner?: PoolWorker }).owner === entry) {
        pending.delete(id);
        job.reject(error);
      }
    }
  }

  function leastBusy(): PoolWorker {
    while (workers.length < size) workers.push(spawn());
    return workers.reduce((a, b) => (b.busy < a.busy ? b : a));
  }

  function run<T>(message: Record<string, unknown>): Promise<T[]> {
    const entry = leastBusy();
    const id = nextId++;
    if (entry.busy++ === 0) entry.worker.ref();
    return new Promise<T[]>((resolve, reject) => {
      pending.set(id, { resolve: resolve as (out: unknown[]) => void, reject, owner: entry } as Pending);
      entry.worker.postMessage({ ...message, id });
    });
  }

  async function chunked<I, O>(items: readonly I[], job: (chunk: I[]) => Promise<O[]>): Promise<O[]> {
    const parts: Promise<O[]>[] = [];
    const chunk = Math.max(1, Math.min(CHUNK, Math.ceil(items.length / size)));
    for (let from = 0; from < items.length; from += chunk) parts.push(job(items.slice(from, from + chunk)));
    return (await Promise.all(parts)).flat();
  }

  return {
    size,
    sign: (seedHex, messages) =>
      chunked(messages, (chunk) => run<string>({ kind: 'sign', seed: seedHex.slice(0, 64), messages: chunk })),
    // A refusal with a small-order R is decided again on this thread, under the key and S checks: node:crypto
    // refuses one on Node 24 only (core/identity.ts holdsWithSmallOrderR).
    verify: async (items) =>
      (await chunked(items, (chunk) => run<boolean>({ kind: 'verify', items: chunk }))).map(
        (ok, i) => ok || (passesSignaturePolicy(items[i]![0], items[i]![2]) && holdsWithSmallOrderR(...items[i]!)),
      ),
    async close() {
      const all = workers.splice(0);
      await Promise.all(all.map((entry) => entry.worker.terminate()));
    },
  };
}

let shared: Ed25519Pool | undefined;

/** The process's pool, created on first use. */
export function sharedEd25519Pool(): Ed25519Pool {
  shared ??= createEd25519Pool();
  return shared;
}
