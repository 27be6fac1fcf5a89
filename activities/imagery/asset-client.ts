import { createHash } from 'node:crypto';
import { BaseClient, BaseResponse } from 'geotiff';
import { readBoundedBody } from '../bounded-body.js';
import { Deadline } from '../deadline.js';
import { safeFetch } from '../safe-fetch.js';

/**
 * One range response holds a few blocks of a band (the window is at most MAX_WINDOW_MEGAPIXELS of 16-bit pixels);
 * a response larger than this is not an answer to our range request and must not fill memory.
 */
export const MAX_ASSET_RESPONSE_BYTES = 64 * 1024 * 1024;

/**
 * The HTTP client geotiff reads a Cloud-Optimized GeoTIFF through: every request is a byte range
 * (geotiff asks for ranges; a server that answers 200 with the whole file is refused by geotiff), carries
 * our User-Agent, goes only to `origins` and is bounded by `timeoutMs`, and every byte received is kept for
 * the asset's hash.
 *
 * What the hash covers: SHA-256 over the bytes of every range response for the asset, concatenated in
 * order of their start offset (then length). Requests run concurrently, so arrival order is not stable;
 * offset order is, and `ranges` lists the [offset, length] pairs so a verifier can re-read exactly those
 * bytes and recompute the hash.
 */
export interface AssetRead {
  href: string;
  sha256: string;
  bytesRead: number;
  requests: number;
  /** [offset, length] of each range response, in hash order. */
  ranges: [number, number][];
}

export class AssetClient extends BaseClient {
  private readonly pieces: { offset: number; bytes: Uint8Array }[] = [];

  constructor(
    url: string,
    private readonly options: { timeoutMs: number; userAgent: string; origins: ReadonlySet<string> },
  ) {
    super(url);
  }

  override async request(init: RequestInit = {}): Promise<BaseResponse> {
    // The deadline covers the body too: it is cleared once getData has read it.
    const deadline = new Deadline(this.options.timeoutMs, init.signal ?? undefined);
    const headers = new Headers(init.headers);
    headers.set('user-agent', this.options.userAgent);
    try {
      // Only allowed origins, redirects included (activities/safe-fetch.ts): a catalog cannot point us at others.
      const response = await safeFetch(
        this.url,
        { headers, signal: deadline.signal },
        { origins: this.options.origins },
      );
      if (!response.ok) {
        await response.body?.cancel();
        throw new Error(`${this.url} answered HTTP ${response.status}`);
      }
      const keep = (offset: number, bytes: Uint8Array) => this.pieces.push({ offset, bytes });
      return new AssetResponse(this.url, response, keep, deadline);
    } catch (error) {
      deadline.clear();
      throw error;
    }
  }

  /** The hash and accounting of everything read so far. */
  summary(): AssetRead {
    const pieces = [...this.pieces].sort((a, b) => a.offset - b.offset || a.bytes.length - b.bytes.length);
    const hash = createHash('sha256');
    let bytesRead = 0;
    for (const piece of pieces) {
      hash.update(piece.bytes);
      bytesRead += piece.bytes.length;
    }
    return {
      href: this.url,
      sha256: hash.digest('hex'),
      bytesRead,
      requests: pieces.length,
      ranges: pieces.map((p) => [p.offset, p.bytes.length]),
    };
  }
}

class AssetResponse extends BaseResponse {
  constructor(
    private readonly url: string,
    private readonly response: Response,
    private readonly keep: (offset: number, bytes: Uint8Array) => void,
    private readonly deadline: Deadline,
  ) {
    super();
  }

  override get status(): number {
    return this.response.status;
  }

  override getHeader(name: string): string | undefined {
    return this.response.headers.get(name) ?? undefined;
  }

  override async getData(): Promise<ArrayBuffer> {
    const body = await readBoundedBody(
      this.response,
      MAX_ASSET_RESPONSE_BYTES,
      () => new Error(`${this.url} sent more than ${MAX_ASSET_RESPONSE_BYTES} bytes in one response`),
      this.deadline.signal,
    ).finally(() => this.deadline.clear());
    const range = /^bytes (\d+)-\d+\/(?:\d+|\*)$/.exec(this.response.headers.get('content-range') ?? '');
    this.keep(range ? Number(range[1]) : 0, body);
    // geotiff gets an ArrayBuffer of its own (a small Buffer may sit in a shared pool); the hash keeps `body`.
    return body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength) as ArrayBuffer;
  }
}
