import { availableParallelism } from 'node:os';
import { passesSignaturePolicy, verifySignatureAsync } from '../core/identity.js';
import type { AsyncVerifier } from '../core/gates/signature.js';
import { createEd25519Pool, type Ed25519Pool } from '../store/ed25519-pool.js';

/**
 * Gate 1's Ed25519 checks on worker threads of their own (store/ed25519-pool.ts), one fewer than the cores: the
 * event loop's thread keeps a core to itself. On the libuv pool (4 threads by default) verifications outnumbered
 * the cores under load, and the kernel's fair share left the JavaScript thread about a third of one; a smaller
 * libuv pool would also starve file and DNS work, which the pool serves too. The checks of one turn of the event
 * loop go as one message, so a check costs the loop a few µs. If a worker fails, its checks fall back to the
 * libuv pool: the answers are the same.
 */
export function createRequestVerifier(
  pool: Ed25519Pool = createEd25519Pool(Math.max(1, availableParallelism() - 1)),
): AsyncVerifier {
  let batch: { items: [string, string, string][]; done: ((ok: boolean) => void)[] } | undefined;

  function flush(): void {
    const { items, done } = batch!;
    batch = undefined;
    pool.verify(items).then(
      (out) => out.forEach((ok, i) => done[i]!(ok)),
      () =>
        items.forEach(([pk, message, signature], i) => void verifySignatureAsync(pk, message, signature).then(done[i])),
    );
  }

  return (pk, message, signature) => {
    if (!passesSignaturePolicy(pk, signature)) return Promise.resolve(false);
    if (batch === undefined) {
      batch = { items: [], done: [] };
      setImmediate(flush);
    }
    const { items, done } = batch;
    items.push([pk, message, signature]);
    return new Promise<boolean>((resolve) => done.push(resolve));
  };
}

let shared: AsyncVerifier | undefined;

/** The process's request verifier, made on first use: one set of threads however many apps a process runs. */
export function sharedRequestVerifier(): AsyncVerifier {
  shared ??= createRequestVerifier();
  return shared;
}
