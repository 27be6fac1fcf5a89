// @ts-check
/**
 * JSON reads from this origin. Errors become values, so a failed poll shows a message instead of throwing.
 * With an operator token (OPERATOR_TOKEN, entered once per tab, kept in sessionStorage) every read sends it as a
 * bearer: the job and inference lists then name their jobs; without one they show counts.
 */

const TOKEN_KEY = 'geofabric.operator_token';

/** The operator token of this tab, or '' when none was entered. */
export function operatorToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? '';
  } catch {
    return ''; // storage disabled: no token
  }
}

/** Keeps (or, given '', forgets) the operator token for this tab. @param {string} token */
export function setOperatorToken(token) {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // storage disabled: the token lasts as long as nothing; reads go without it
  }
}

/**
 * @typedef {{ ok: true, status: number, body: any } | { ok: false, status: number, error: string, detail: string, body: any }} Answer
 */

/** @param {string} path @param {{ timeoutMs?: number }} [options] @returns {Promise<Answer>} */
export async function getJson(path, { timeoutMs = 10_000 } = {}) {
  let res;
  try {
    const token = operatorToken();
    /** @type {Record<string, string>} */
    const headers = { accept: 'application/json' };
    if (token) headers.authorization = `Bearer ${token}`;
    res = await fetch(path, { headers, signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    const timedOut = error instanceof Error && error.name === 'TimeoutError';
    return {
      ok: false,
      status: 0,
      error: timedOut ? 'timeout' : 'network_error',
      detail: timedOut ? `no answer within ${timeoutMs / 1000} s` : 'the gateway is unreachable',
      body: null,
    };
  }
  let body = null;
  try {
    body = await res.json();
  } catch {
    // not JSON: reported below
  }
  if (res.ok && body !== null) return { ok: true, status: res.status, body };
  return {
    ok: false,
    status: res.status,
    error: typeof body?.error === 'string' ? body.error : `http_${res.status}`,
    detail: typeof body?.detail === 'string' ? body.detail : res.ok ? 'the answer is not JSON' : res.statusText,
    body,
  };
}

/** One line for an error banner. @param {Answer} answer */
export const describeError = (answer) =>
  answer.ok ? '' : `${answer.error}${answer.status ? ` (HTTP ${answer.status})` : ''}: ${answer.detail}`;
