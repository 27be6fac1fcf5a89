import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { signRequestBody } from '../core/gates/signature.js';
import { readKeyFile } from './key-file.js';

export const SUBMIT_USAGE = 'submit JOB.json --key FILE [--url BASE] [--delegation CERT.b64]';
export const DEFAULT_URL = 'http://127.0.0.1:8080';

/** A gateway's answer: its HTTP status and its JSON body (a non-JSON body as `{ status, body }`). */
export interface GatewayAnswer {
  status: number;
  body: unknown;
}

/** GETs or POSTs JSON to the gateway; a body that is not JSON comes back wrapped, never thrown. */
export async function callGateway(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
  doFetch: typeof fetch = fetch,
): Promise<GatewayAnswer> {
  const res = await doFetch(url, init);
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) as unknown };
  } catch {
    return { status: res.status, body: { status: res.status, body: text.slice(0, 2000) } };
  }
}

/**
 * The `x-svc-delegation-cert` header of a certificate file: base64 as `cert issue --base64` prints it, or the
 * certificate or chain as JSON (`cert issue` without --base64), encoded here.
 */
export function delegationHeaderOf(path: string): string {
  const text = readFileSync(path, 'utf8').trim();
  return text.startsWith('{') || text.startsWith('[') ? Buffer.from(text).toString('base64') : text;
}

/** Signs a job with the key (requester_pk is the key's) and POSTs it to BASE/v1/compute (docs/protocol.md §10.3). */
export async function submitSignedJob(
  job: Record<string, unknown>,
  options: { secretKey: string; url: string; delegationHeader?: string; fetch?: typeof fetch },
): Promise<GatewayAnswer> {
  const { body, signature } = signRequestBody(options.secretKey, job);
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-idn-signature': signature };
  if (options.delegationHeader !== undefined) headers['x-svc-delegation-cert'] = options.delegationHeader;
  return callGateway(
    new URL('/v1/compute', options.url).toString(),
    { method: 'POST', headers, body: JSON.stringify(body) },
    options.fetch,
  );
}

/**
 * `geofabric submit`: `sign` and `curl` in one step, kept as the short form of `geofabric job submit`. Signs the
 * job, POSTs it with the X-Idn-Signature header (and x-svc-delegation-cert when given), and prints the gateway's
 * JSON answer as is. Exit 0 on a 2xx answer, 1 otherwise (the error body is printed).
 */
export async function submitCommand(argv: string[], out: (value: unknown) => void): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      key: { type: 'string' },
      url: { type: 'string', default: DEFAULT_URL },
      delegation: { type: 'string' },
    },
  });
  const [file] = positionals;
  if (!values.key || file === undefined || positionals.length !== 1) throw new TypeError(`usage: ${SUBMIT_USAGE}`);
  const job = JSON.parse(readFileSync(file === '-' ? 0 : file, 'utf8')) as Record<string, unknown>;
  const answer = await submitSignedJob(job, {
    secretKey: readKeyFile(values.key).secretKey,
    url: values.url,
    ...(values.delegation ? { delegationHeader: readFileSync(values.delegation, 'utf8').trim() } : {}),
  });
  out(answer.body);
  return answer.status >= 200 && answer.status < 300 ? 0 : 1;
}
