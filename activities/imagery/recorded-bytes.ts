import { BaseClient, BaseResponse } from 'geotiff';
import type { AssetRead } from './asset-client.js';
import type { CogByteClient } from './cog-reader.js';

/**
 * A geotiff byte client over bytes fetched before (a receipt's recomputation, docs/protocol.md §15.4): it answers
 * each range request from the pieces a record lists, re-fetched and hash-checked, and fails a request for bytes
 * they do not cover, so the computation can only have read what the record names. Nothing here touches a network.
 */
export class RecordedBytesClient extends BaseClient implements CogByteClient {
  private readonly pieces: { offset: number; bytes: Uint8Array }[];
  private served = 0;
  private requestsServed = 0;

  constructor(url: string, pieces: readonly { offset: number; bytes: Uint8Array }[]) {
    super(url);
    this.pieces = [...pieces].sort((a, b) => a.offset - b.offset);
  }

  override async request(init: RequestInit = {}): Promise<BaseResponse> {
    const range = /^bytes=(\d+)-(\d+)$/.exec(new Headers(init.headers).get('range') ?? '');
    if (!range) throw new UncoveredRead(`${this.url}: a read without a byte range`);
    const start = Number(range[1]);
    const end = Number(range[2]);
    const bytes = this.slice(start, end);
    this.served += bytes.length;
    this.requestsServed++;
    return new RecordedResponse(start, bytes);
  }

  /** Bytes [start, end] from contiguous pieces; shorter only where the pieces end (the file's end, as recorded). */
  private slice(start: number, end: number): Uint8Array {
    const parts: Uint8Array[] = [];
    let at = start;
    while (at <= end) {
      const piece = this.pieces.find((p) => p.offset <= at && at < p.offset + p.bytes.length);
      if (!piece) break;
      const from = at - piece.offset;
      const to = Math.min(piece.bytes.length, end + 1 - piece.offset);
      parts.push(piece.bytes.subarray(from, to));
      at = piece.offset + to;
    }
    if (at === start) throw new UncoveredRead(`${this.url}: bytes ${start}-${end} are not among the recorded ranges`);
    const out = new Uint8Array(at - start);
    let put = 0;
    for (const part of parts) {
      out.set(part, put);
      put += part.length;
    }
    return out;
  }

  /** What was served (the hash is not recomputed here: the caller checked the pieces against the record). */
  summary(): AssetRead {
    return { href: this.url, sha256: '', bytesRead: this.served, requests: this.requestsServed, ranges: [] };
  }
}

/** The recomputation asked for bytes the record does not list: the record's list is not what the step read. */
export class UncoveredRead extends Error {
  override name = 'UncoveredRead';
}

class RecordedResponse extends BaseResponse {
  constructor(
    private readonly start: number,
    private readonly bytes: Uint8Array,
  ) {
    super();
  }

  override get status(): number {
    return 206;
  }

  override getHeader(name: string): string | undefined {
    if (name.toLowerCase() !== 'content-range') return undefined;
    return `bytes ${this.start}-${this.start + this.bytes.length - 1}/*`;
  }

  override async getData(): Promise<ArrayBuffer> {
    return this.bytes.slice().buffer;
  }
}
