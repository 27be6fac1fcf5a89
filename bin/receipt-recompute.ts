/**
 * `geofabric receipt verify --recompute` (docs/protocol.md §15.4): after the offline checks passed, each step is
 * recomputed from the public inputs its record names (activities/recompute/). The URLs come from a receipt a
 * stranger may have handed over, so what this fetches is bounded here:
 *
 * - only the asset URLs and byte ranges the step records list, and tiles from the caller's own `--tile-url`;
 * - HTTPS only, unless `--allow-http`;
 * - no host that resolves to a loopback, private, link-local, shared, multicast or reserved address, unless
 *   `--allow-private` (checked on the addresses the connection actually uses, so DNS cannot switch them after);
 * - no redirect followed; each request at most RECOMPUTE_TIMEOUT_MS; a range answer exactly the bytes asked,
 *   a tile at most MAX_TILE_BYTES, and at most RECOMPUTE_MAX_BYTES in all.
 */
import { lookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP } from 'node:net';
import { InputUnavailable, recomputeReceipt, type RecomputeIo } from '../activities/recompute/index.js';
import type { StepRecomputation } from '../core/receipt-recompute.js';
import type { JobReceipt } from '../core/receipt.js';

export const RECOMPUTE_TIMEOUT_MS = 30_000;
/** All the bytes one recomputation may fetch: a resolution-6 cell's bands are a few MB; 256 MiB is generous. */
export const RECOMPUTE_MAX_BYTES = 256 * 1024 * 1024;
export const MAX_TILE_BYTES = 4 * 1024 * 1024;
const USER_AGENT = 'geofabric-receipt-recompute';

export interface RecomputeOptions {
  allowHttp: boolean;
  allowPrivate: boolean;
  /** `--tile-url`: style → `{z}/{x}/{y}` template, `*` for every style. */
  tileTemplates: Record<string, string>;
  timeoutMs?: number;
  maxBytes?: number;
}

/** Addresses a receipt may not make us reach without --allow-private (RFC 6890 special-purpose ranges). */
const NOT_PUBLIC = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  NOT_PUBLIC.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  NOT_PUBLIC.addSubnet(net, bits, 'ipv6');
}

export function isPublicAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return !NOT_PUBLIC.check(mapped[1]!, 'ipv4');
  const family = isIP(address);
  if (family === 0) return false;
  return !NOT_PUBLIC.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** `--tile-url` values: `STYLE=TEMPLATE` or a bare template for every style. */
export function tileTemplates(values: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const value of values) {
    const named = /^([a-z0-9-]+)=(.+)$/i.exec(value);
    if (named) out[named[1]!] = named[2]!;
    else out['*'] = value;
  }
  return out;
}

/** The RecomputeIo of the CLI: node:http(s), with the policy above. */
export function guardedIo(options: RecomputeOptions): RecomputeIo {
  const timeoutMs = options.timeoutMs ?? RECOMPUTE_TIMEOUT_MS;
  let budget = options.maxBytes ?? RECOMPUTE_MAX_BYTES;

  const guardedLookup: RequestOptions['lookup'] = (hostname, lookupOptions, callback) => {
    lookup(hostname, { ...lookupOptions, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 4);
      const refused = addresses.find((a) => !isPublicAddress(a.address));
      if (refused && !options.allowPrivate) {
        return callback(
          new InputUnavailable(`${hostname} resolves to the non-public address ${refused.address} (--allow-private)`),
          '',
          4,
        );
      }
      // Node asks for every address (autoSelectFamily) or one.
      if (lookupOptions.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };

  function get(
    url: string,
    headers: Record<string, string>,
    limit: number,
  ): Promise<{ res: IncomingMessage; body: Buffer }> {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return Promise.reject(new InputUnavailable(`${url.slice(0, 100)} is not a URL`));
    }
    if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && options.allowHttp)) {
      return Promise.reject(
        new InputUnavailable(
          `${parsed.origin}: only https URLs are fetched${parsed.protocol === 'http:' ? ' (--allow-http)' : ''}`,
        ),
      );
    }
    const literal = parsed.hostname.replace(/^\[|\]$/g, '');
    if (isIP(literal) !== 0 && !isPublicAddress(literal) && !options.allowPrivate) {
      return Promise.reject(new InputUnavailable(`${parsed.host} is a non-public address (--allow-private)`));
    }
    const send = parsed.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      let settled = false;
      const where = `GET ${url}${headers.range ? ` ${headers.range}` : ''}`;
      // The first outcome wins; the connection is then torn down without another error to handle.
      const fail = (why: string | InputUnavailable) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(why instanceof InputUnavailable ? why : new InputUnavailable(`${where}: ${why}`));
        req.destroy();
      };
      const req = send(parsed, {
        method: 'GET',
        headers: { ...headers, 'user-agent': USER_AGENT },
        lookup: guardedLookup,
      });
      const timer = setTimeout(() => fail(`no answer within ${timeoutMs / 1000} s`), timeoutMs);
      req.on('error', (error: NodeJS.ErrnoException) =>
        fail(
          error instanceof InputUnavailable
            ? error
            : error.code === 'ECONNREFUSED'
              ? 'connection refused'
              : error.code === 'ENOTFOUND'
                ? 'host not found'
                : error.message,
        ),
      );
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > budget) return fail('the recomputation byte budget is spent');
          if (size > limit) return fail(`more than ${limit} bytes`);
          chunks.push(chunk);
        });
        res.on('end', () => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          budget -= size;
          resolve({ res, body: Buffer.concat(chunks, size) });
        });
        res.on('error', (error) => fail(error.message));
      });
      req.end();
    });
  }

  return {
    async fetchRange(href, offset, length) {
      const range = `bytes=${offset}-${offset + length - 1}`;
      const { res, body } = await get(href, { range }, length);
      const where = `GET ${href} ${range}`;
      if (res.statusCode !== 206) {
        const redirect = res.statusCode !== undefined && res.statusCode >= 300 && res.statusCode < 400;
        throw new InputUnavailable(
          `${where}: answered HTTP ${res.statusCode}${redirect ? ' (redirects are not followed)' : ''}`,
        );
      }
      const start = /^bytes (\d+)-/.exec(res.headers['content-range'] ?? '');
      if (!start || Number(start[1]) !== offset) throw new InputUnavailable(`${where}: answered another range`);
      return new Uint8Array(body.buffer, body.byteOffset, body.length);
    },
    async fetchBytes(url) {
      const { res, body } = await get(url, {}, MAX_TILE_BYTES);
      if (res.statusCode !== 200) throw new InputUnavailable(`GET ${url}: answered HTTP ${res.statusCode}`);
      return new Uint8Array(body.buffer, body.byteOffset, body.length);
    },
    tileTemplates: options.tileTemplates,
  };
}

export const recomputeWithPolicy = (receipt: JobReceipt, options: RecomputeOptions): Promise<StepRecomputation[]> =>
  recomputeReceipt(receipt, guardedIo(options));
