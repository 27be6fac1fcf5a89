/**
 * An upstream response body read within a byte budget: a declared length over it is refused before
 * reading, and the stream is abandoned (cancelled) as soon as it passes it, so a hostile or broken
 * upstream cannot fill memory. `tooLarge` builds the caller's own error.
 */
export async function readBoundedBody(res: Response, limitBytes: number, tooLarge: () => Error): Promise<Buffer> {
  if (Number(res.headers.get('content-length') ?? NaN) > limitBytes) {
    await res.body?.cancel();
    throw tooLarge();
  }
  if (!res.body) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of res.body) {
    total += chunk.byteLength;
    if (total > limitBytes) throw tooLarge(); // leaving the loop cancels the stream
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, total);
}
