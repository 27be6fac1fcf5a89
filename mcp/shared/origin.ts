/**
 * DNS-rebinding protection (item 1). A web page on a foreign origin can make a browser reach a
 * server bound to 127.0.0.1, directly or by rebinding its own name to it.
 *
 * Origin (MCP routes): a browser says where a cross-origin page came from in `Origin`. No Origin (a
 * non-browser client) passes, a loopback origin (any port) passes, an origin on the configured list passes,
 * everything else — including `null` (sandboxed frames, file://) — is refused before the MCP layer sees it.
 *
 * Host (every route, when the server is bound to loopback): a rebound page is same-origin with the server,
 * and a browser sends no Origin on a same-origin GET, but its `Host` is still the attacker's name. So a
 * loopback-bound server answers only Host values that are loopback names (any port) or configured.
 *
 * The SDK's own `allowedOrigins` option matches exact strings only (no "any loopback port") and is
 * deprecated in favour of middleware such as this one.
 */

const LOOPBACK_HOSTS = new Set(['localhost', '[::1]']);
const IPV4_LOOPBACK = /^127(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;

const isLoopbackName = (host: string): boolean =>
  LOOPBACK_HOSTS.has(host) || IPV4_LOOPBACK.test(host) || host.endsWith('.localhost');

/** True when `host` (a bind address) only accepts local connections. */
export function isLoopbackAddress(host: string): boolean {
  const name = host.toLowerCase();
  return name === '::1' || name === '[::1]' || name === 'localhost' || IPV4_LOOPBACK.test(name);
}

/** True when a `Host` header value names this loopback-bound server (or a configured name). */
export function hostAllowed(hostHeader: string | undefined, allowed: readonly string[]): boolean {
  if (hostHeader === undefined || hostHeader === '') return false;
  let url: URL;
  try {
    url = new URL(`http://${hostHeader}`);
  } catch {
    return false;
  }
  const name = url.hostname.toLowerCase();
  return isLoopbackName(name) || allowed.includes(name) || allowed.includes(hostHeader.toLowerCase());
}

/** True when `origin` (an Origin header value, or undefined when absent) may use the MCP routes. */
export function originAllowed(origin: string | undefined, allowed: readonly string[]): boolean {
  if (origin === undefined || origin === '') return true;
  if (allowed.includes(origin)) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  // An Origin is scheme://host[:port] and nothing else.
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== origin) return false;
  return isLoopbackName(url.hostname.toLowerCase());
}
