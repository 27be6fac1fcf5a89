import { availableParallelism } from 'node:os';
import { passesSignaturePolicy, verifySignatureAsync } from '../core/identity.js';
import type { AsyncVerifier } from '../core/gates/signature.js';
import { createEd25519Pool, type Ed25519Pool } from '../store/ed25519-pool.js';

/**
 * Gate 1's Ed25519 checks on worker threads of their own (store/ed25519-pool.ts), by default one fewer than the
 * cores (VERIFY_THREADS): the event loop's thread keeps a core to itself. On the libuv pool (4 threads by default) verifications outnumbered
 * the cores under load, and the kernel's fair share left the JavaScript thread about a third of one; a smaller
 * libuv pool would also starve file and DNS work, which the pool serves too. The checks of one turn of the event
 * loop go as one message (a check costs the loop a few µs), at most MAX_IN_FLIGHT batches per thread; the rest
 * wait for a batch to come back. If a worker fails, its checks fall back to the libuv pool: the same answers.
 */
export function createRequestVerifier(pool: Ed25519Pool): AsyncVerifier {
  let items: Check[] = [];
  let done: ((ok: boolean) => void)[] = [];
  let scheduled = false;
  let inFlight = 0;

  /** Sends what the turn collected, unless the workers hold enough: then it goes when a batch comes back. */
  function flush(): void {
    scheduled = false;
    if (items.length === 0 || inFlight >= MAX_IN_FLIGHT * pool.size) return;
    const sent = items;
    const waiting = done;
    items = [];
    done = [];
    inFlight++;
    pool.verify(sent).then(
      (out) => settle(() => out.forEach((ok, i) => waiting[i]!(ok))),
      () =>
        settle(() =>
          sent.forEach(
            ([pk, message, signature], i) => void verifySignatureAsync(pk, message, signature).then(waiting[i]),
          ),
        ),
    );
  }

  function settle(answer: () => void): void {
    inFlight--;
    answer();
    schedule();
  }

  function schedule(): void {
    if (scheduled || items.length === 0) return;
    scheduled = true;
    setImmediate(flush);
  }

  return (pk, message, signature) => {
    if (!passesSignaturePolicy(pk, signature)) return Promise.resolve(false);
    items.push([pk, message, signature]);
    const answer = new Promise<boolean>((resolve) => done.push(resolve));
    schedule();
    return answer;
  };
}

type Check = [pk: string, message: string, signature: string];

/** Batches per worker thread sent and not answered: one being verified, one waiting, so the thread never idles. */
const MAX_IN_FLIGHT = 2;

const shared = new Map<number, AsyncVerifier>();

/**
 * The process's request verifier with `threads` worker threads (default: the cores less one), made on first use:
 * one set of threads however many apps a process runs.
 */
export function sharedRequestVerifier(threads = Math.max(1, availableParallelism() - 1)): AsyncVerifier {
  let verifier = shared.get(threads);
  if (verifier === undefined) shared.set(threads, (verifier = createRequestVerifier(createEd25519Pool(threads))));
  return verifier;
}
