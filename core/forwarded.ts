/**
 * Who the client is behind trusted reverse proxies (docs/operations.md "Behind a reverse proxy"). Pure: the
 * gateway and both MCP servers call it through api/proxy-trust.ts.
 *
 * Every proxy appends what it saw to the right of a list (X-Forwarded-For, or RFC 7239 `Forwarded`), so only
 * the rightmost `hops` entries were written by proxies we trust; everything to their left is the client's
 * own text. The client is the entry the outermost trusted proxy wrote: the `hops`-th from the right (or the
 * leftmost when the list is shorter, as Express's and Koa's hop counts do).
 *
 * Exactly one header family is read, chosen by the operator: `x-forwarded-for` (with X-Forwarded-Host and
 * X-Forwarded-Proto) or `forwarded`. Reading both would let a client write whichever one the proxy does
 * not overwrite.
 */
export const PROXY_HEADERS = ['x-forwarded-for', 'forwarded'] as const;
export type ProxyHeader = (typeof PROXY_HEADERS)[number];

export interface ProxyTrust {
  /** Proxies in front of this server that append to the header (≥ 1). */
  hops: number;
  header: ProxyHeader;
}

/** The request headers this reads; a repeated header arrives joined by ", " (as Node joins them). */
export interface ForwardingHeaders {
  forwarded?: string | undefined;
  xForwardedFor?: string | undefined;
  xForwardedHost?: string | undefined;
  xForwardedProto?: string | undefined;
}

/** What the outermost trusted proxy said about the client; a field is absent when it said nothing usable. */
export interface ForwardedClient {
  /** An IP literal (no port, no brackets), or an RFC 7239 obfuscated identifier (`_hidden`) or `unknown`. */
  address?: string;
  /** host[:port] as the client addressed it. */
  host?: string;
  proto?: 'http' | 'https';
}

// A host name or IP literal with an optional port; nothing else is taken as a host.
const SANE_HOST = /^(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$/;
const OBFUSCATED = /^_[A-Za-z0-9._-]{1,64}$/;

const IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;
const isIpv4 = (s: string) => IPV4.test(s);
/** WHATWG URL parsing validates an IPv6 literal without any I/O. */
function isIpv6(s: string): boolean {
  if (!/^[0-9A-Fa-f:.]{2,45}$/.test(s) || !s.includes(':')) return false;
  try {
    new URL(`http://[${s}]/`);
    return true;
  } catch {
    return false;
  }
}

export function isSaneHost(host: string): boolean {
  return SANE_HOST.test(host);
}

/**
 * The entry the outermost of `hops` trusted proxies wrote. Lists split on every comma, quoted or not: no value
 * read here may contain one, and a client's stray quote then cannot swallow the entries proxies appended.
 */
export function trustedEntry<T>(list: readonly T[], hops: number): T | undefined {
  return list.length >= hops ? list[list.length - hops] : list[0];
}

const commaList = (value: string | undefined): string[] =>
  value === undefined
    ? []
    : value
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');

/** RFC 7239 quoted-string → its text; a token stays as it is. */
function unquote(value: string): string {
  const v = value.trim();
  return v.length >= 2 && v.startsWith('"') && v.endsWith('"') ? v.slice(1, -1).replace(/\\(.)/g, '$1') : v;
}

/** RFC 7239 elements, left to right: each a map of lower-cased parameter names to unquoted values. */
export function parseForwarded(value: string | undefined): Record<string, string>[] {
  return commaList(value).map((element) => {
    const pairs: Record<string, string> = {};
    for (const pair of element.split(';')) {
      const at = pair.indexOf('=');
      if (at <= 0) continue;
      const name = pair.slice(0, at).trim().toLowerCase();
      // The first of a repeated parameter counts (a repeated one is malformed anyway).
      if (!(name in pairs)) pairs[name] = unquote(pair.slice(at + 1));
    }
    return pairs;
  });
}

/**
 * A node as proxies write it (`192.0.2.1`, `192.0.2.1:8080`, `[2001:db8::1]:4711`, `2001:db8::1`, `_hidden`,
 * `unknown`) → the address alone; undefined for anything else.
 */
export function nodeAddress(node: string | undefined): string | undefined {
  if (node === undefined) return undefined;
  const n = node.trim();
  if (n.toLowerCase() === 'unknown') return 'unknown';
  if (OBFUSCATED.test(n)) return n;
  const bracketed = /^\[([^\]]+)\](?::[A-Za-z0-9._-]+)?$/.exec(n);
  if (bracketed) return isIpv6(bracketed[1]!) ? bracketed[1]!.toLowerCase() : undefined;
  if (isIpv4(n)) return n;
  if (isIpv6(n)) return n.toLowerCase();
  const v4Port = /^([\d.]{7,15}):[A-Za-z0-9._-]+$/.exec(n);
  return v4Port && isIpv4(v4Port[1]!) ? v4Port[1] : undefined;
}

const protoOf = (value: string | undefined): 'http' | 'https' | undefined => {
  const v = value?.trim().toLowerCase();
  return v === 'http' || v === 'https' ? v : undefined;
};

const hostOf = (value: string | undefined): string | undefined =>
  value !== undefined && isSaneHost(value.trim()) ? value.trim() : undefined;

/** What the outermost trusted proxy reported, from the one header family `trust` names. */
export function forwardedClient(headers: ForwardingHeaders, trust: ProxyTrust): ForwardedClient {
  const hops = Math.max(1, Math.floor(trust.hops));
  let address: string | undefined;
  let host: string | undefined;
  let proto: 'http' | 'https' | undefined;
  if (trust.header === 'forwarded') {
    const element = trustedEntry(parseForwarded(headers.forwarded), hops);
    address = nodeAddress(element?.for);
    host = hostOf(element?.host);
    proto = protoOf(element?.proto);
  } else {
    address = nodeAddress(trustedEntry(commaList(headers.xForwardedFor), hops));
    host = hostOf(trustedEntry(commaList(headers.xForwardedHost), hops));
    proto = protoOf(trustedEntry(commaList(headers.xForwardedProto), hops));
  }
  return {
    ...(address !== undefined ? { address } : {}),
    ...(host !== undefined ? { host } : {}),
    ...(proto !== undefined ? { proto } : {}),
  };
}
