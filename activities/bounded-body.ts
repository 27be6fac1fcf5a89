/**
 * An upstream response body read within a byte budget: a declared length over it is refused before
 * reading, and the stream is abandoned (cancelled) as soon as it passes it, so a hostile or broken
 * upstream cannot fill memory. `tooLarge` builds the caller's own error.
 *
 * `signal` (the call's deadline and cancellation) also ends the read, here and not only through fetch: the
 * fetch of Node 20's undici can lose the link from the signal to a body still streaming once its request
 * object is garbage-collected (with `redirect: 'error'`, https://github.com/nodejs/undici/pull/4750), and an
 * upstream that stalls mid-body then held the read for good. On abort the read is cancelled and the signal's
 * reason thrown (a `TimeoutError` for a deadline).
 */
export async function readBoundedBody(
  res: Response,
  limitBytes: number,
  tooLarge: () => Error,
  signal?: AbortSignal,
): Promise<Buffer> {
  if (Number(res.headers.get('content-length') ?? NaN) > limitBytes) {
    await res.body?.cancel();
    throw tooLarge();
  }
  if (!res.body) return Buffer.alloc(0);
  const reader = res.body.getReader();
  const stop = () => void reader.cancel(signal?.reason).catch(() => undefined);
  signal?.addEventListener('abort', stop, { once: true });
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      signal?.throwIfAborted();
      const { done, value } = await reader.read();
      signal?.throwIfAborted(); // a cancel ends the pending read as if the body were done
      if (done) return Buffer.concat(chunks, total);
      total += value.byteLength;
      if (total > limitBytes) {
        await reader.cancel().catch(() => undefined);
        throw tooLarge();
      }
      chunks.push(value);
    }
  } finally {
    signal?.removeEventListener('abort', stop);
  }
}
