import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';

export type XyzFormat = 'png' | 'jpg' | 'webp';

export interface XyzRequest {
  path: string;
  ifNoneMatch: string | undefined;
  ifModifiedSince: string | undefined;
  userAgent: string | undefined;
  status: number;
}

/**
 * A local XYZ tile server speaking real HTTP: `/{png|jpg|webp}/{a}/{b}/{c}` answers a 256 px image of that
 * format (real bytes encoded by sharp, distinct per path and per `version`), with a strong ETag and 304 on
 * a matching If-None-Match. Knobs: `delayMs` (slow upstream), `failWith` (answer that status),
 * `garbage` (200 with an HTML body), `validators` (send ETag/Last-Modified or not), `contentType`
 * (lie about the type), `change()` (new bytes on every path). Every request is logged.
 */
export interface XyzServer {
  url: string;
  /** A URL template serving `format`, placeholders in `order` (Esri's satellite is z/y/x). */
  template(format: XyzFormat, order?: 'zxy' | 'zyx'): string;
  requests: XyzRequest[];
  /** Requests whose path starts with `prefix` (all when omitted). */
  count(prefix?: string): number;
  delayMs: number;
  failWith: number | null;
  garbage: boolean;
  validators: boolean;
  contentType: string | null;
  change(): void;
  /** The bytes the server currently serves at `path`. */
  bytesAt(path: string): Promise<Buffer>;
  close(): Promise<void>;
}

const MIME: Record<XyzFormat, string> = { png: 'image/png', jpg: 'image/jpeg', webp: 'image/webp' };
const LAST_MODIFIED = 'Wed, 01 Jan 2026 00:00:00 GMT';

/** Deterministic pixels per seed: a gradient plus xorshift noise, so sizes are tile-like (tens of KB). */
async function tileImage(format: XyzFormat, seed: string): Promise<Buffer> {
  const digest = createHash('sha256').update(seed).digest();
  let state = digest.readUInt32LE(0) || 1;
  const size = 256;
  const raw = Buffer.alloc(size * size * 3);
  for (let i = 0; i < size * size; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    const noise = (state >>> 0) % 48;
    const x = i % size;
    const y = Math.floor(i / size);
    raw[i * 3] = (digest[1]! + x + noise) & 0xff;
    raw[i * 3 + 1] = (digest[2]! + y + noise) & 0xff;
    raw[i * 3 + 2] = (digest[3]! + noise) & 0xff;
  }
  const image = sharp(raw, { raw: { width: size, height: size, channels: 3 } });
  if (format === 'png') return image.png().toBuffer();
  if (format === 'jpg') return image.jpeg({ quality: 80 }).toBuffer();
  return image.webp({ quality: 80 }).toBuffer();
}

export async function startXyzServer(): Promise<XyzServer> {
  const images = new Map<string, Promise<Buffer>>();
  let version = 1;
  const imageAt = (path: string): Promise<Buffer> | null => {
    const match = /^\/(png|jpg|webp)\/\d+\/\d+\/\d+$/.exec(path);
    if (!match) return null;
    const key = `${version}:${path}`;
    let image = images.get(key);
    if (!image) images.set(key, (image = tileImage(match[1] as XyzFormat, key)));
    return image;
  };

  const state: Omit<XyzServer, 'url' | 'close'> = {
    template: (format, order = 'zxy') => `${url}/${format}/${order === 'zxy' ? '{z}/{x}/{y}' : '{z}/{y}/{x}'}`,
    requests: [],
    count: (prefix = '') => state.requests.filter((r) => r.path.startsWith(prefix)).length,
    delayMs: 0,
    failWith: null,
    garbage: false,
    validators: true,
    contentType: null,
    change: () => {
      version++;
    },
    bytesAt: async (path) => {
      const image = imageAt(path);
      if (!image) throw new Error(`no tile at ${path}`);
      return image;
    },
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const log: XyzRequest = {
      path,
      ifNoneMatch: req.headers['if-none-match'],
      ifModifiedSince: req.headers['if-modified-since'],
      userAgent: req.headers['user-agent'],
      status: 0,
    };
    state.requests.push(log);
    const answer = (status: number, headers: Record<string, string>, body?: Buffer | string) => {
      log.status = status;
      if (res.destroyed) return;
      res.writeHead(status, headers);
      res.end(body);
    };
    if (state.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, state.delayMs));
    if (state.failWith !== null) return answer(state.failWith, { 'content-type': 'text/plain' }, 'failure');
    if (state.garbage) return answer(200, { 'content-type': 'image/png' }, '<html>rate limited</html>');
    const image = imageAt(path);
    if (!image) return answer(404, { 'content-type': 'text/plain' }, 'no such tile');
    const bytes = await image;
    const etag = `"${createHash('sha256').update(bytes).digest('hex').slice(0, 20)}"`;
    const validators: Record<string, string> = state.validators ? { etag, 'last-modified': LAST_MODIFIED } : {};
    if (state.validators && req.headers['if-none-match'] === etag) return answer(304, validators);
    const type = state.contentType ?? MIME[/^\/(\w+)\//.exec(path)![1] as XyzFormat];
    answer(200, { 'content-type': type, ...validators }, bytes);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(state, {
    url,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  }) as XyzServer;
}
