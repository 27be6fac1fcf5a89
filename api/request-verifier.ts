import { availableParallelism } from 'node:os';
import { passesSignaturePolicy, verifySignatureAsync } from '../core/identity.js';
import type { AsyncVerifier } from '../core/gates/signature.js';
import { createEd25519Pool, type Ed25519Pool } from '../store/ed25519-pool.js';

/**
 * Gate 1's Ed25519 checks on worker threads of their own (store/ed25519-pool.ts), by default one fewer than the
 * cores (VERIFY_THREADS): the event loop's thread keeps a core to itself. On the libuv pool (4 threads by default)
 * verifications outnumbered the cores under load, and the kernel's fair share left the JavaScript thread about a
 * third of one; a smaller libuv pool would also starve file and DNS work, which the pool serves too.
 *
 * The checks of one turn of the event loop are sent at its end in messages of at most MESSAGE_CHECKS: few enough
 * that answers stream back while the event loop parses the next requests (one message per turn left the verify
 * thread and the event loop waiting on each other in turns), enough that a check costs the loop a few µs. If a
 * worker fails, its checks fall back to the libuv pool: the same answers.
 */
export function createRequestVerifier(pool: Ed25519Pool): AsyncVerifier {
  let items: Check[] = [];
  let done: ((ok: boolean) => void)[] = [];

  function flush(): void {
    for (let from = 0; from < items.length; from += MESSAGE_CHECKS) {
      send(items.slice(from, from + MESSAGE_CHECKS), done.slice(from, from + MESSAGE_CHECKS));
    }
    items = [];
    done = [];
  }

  function send(checks: Check[], answers: ((ok: boolean) => void)[]): void {
    pool.verify(checks).then(
      (out) => out.forEach((ok, i) => answers[i]!(ok)),
      () =>
        checks.forEach(
          ([pk, message, signature], i) => void verifySignatureAsync(pk, message, signature).then(answers[i]),
        ),
    );
  }

  return (pk, message, signature) => {
    if (!passesSignaturePolicy(pk, signature)) return Promise.resolve(false);
    if (items.length === 0) setImmediate(flush);
    items.push([pk, message, signature]);
    return new Promise<boolean>((resolve) => done.push(resolve));
  };
}

type Check = [pk: string, message: string, signature: string];

/**
 * Checks per message to a verify thread: about 0.75 ms of its work. Measured on 2 cores with 32 connections
 * (docs/benchmarks.md): 8–12 kept both cores busy; 16 and one message per turn left them idle in turns, 4 and
 * fewer cost the event loop more in messages than they saved.
 */
const MESSAGE_CHECKS = 8;

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
