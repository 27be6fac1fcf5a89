import type { ProxyHeader } from '../core/forwarded.js';

/** Request abuse bounds of one HTTP server: rate limits, trusted proxy, receive timeouts. */
export interface HttpLimits {
  /** Requests per minute per client address (IPv6 by /64); 0: no limit. */
  ipPerMinute: number;
  /** Requests per minute per principal (signing key, API key, bearer token); 0: no limit. */
  principalPerMinute: number;
  /**
   * Request body bytes per minute per client address (its bucket holds `burstSeconds` of it); 0 or unset: no
   * limit. Parsing and verifying a body costs CPU in proportion to its size: this bounds one client's share.
   */
  ipBodyBytesPerMinute?: number;
  /** A bucket holds this many seconds of its rate: the burst a client may send at once. */
  burstSeconds: number;
  /** Behind reverse proxies: take the client address, host and scheme from what they forwarded (api/proxy-trust.ts). */
  trustProxy: boolean;
  /** Proxies in front that append to the forwarding header (TRUST_PROXY_HOPS); default 1. */
  trustProxyHops?: number | undefined;
  /** The one header family read (TRUST_PROXY_HEADER); default `x-forwarded-for`. */
  trustProxyHeader?: ProxyHeader | undefined;
  /** The whole request (headers and body) must arrive within this. */
  requestTimeoutMs: number;
  /** Its headers within this. */
  headersTimeoutMs: number;
}

/** Longest query string accepted (414 beyond): real queries here are a few hundred bytes. */
export const MAX_QUERY_BYTES = 4096;
