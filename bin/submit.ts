import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { signRequestBody } from '../core/gates/signature.js';
import { readKeyFile } from './key-file.js';

export const SUBMIT_USAGE = 'submit JOB.json --key FILE [--url BASE] [--delegation CERT.b64]';

/**
 * `geofabric submit`: `sign` and `curl` in one step. Signs the job with the key (requester_pk is the key's),
 * POSTs it to BASE/v1/compute with the X-Idn-Signature header (and x-svc-delegation-cert when given), and
 * prints the gateway's JSON answer as is. Exit 0 on a 2xx answer, 1 otherwise (the error body is printed).
 */
export async function submitCommand(argv: string[], out: (value: unknown) => void): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      key: { type: 'string' },
      url: { type: 'string', default: 'http://127.0.0.1:8080' },
      delegation: { type: 'string' },
    },
  });
  const [file] = positionals;
  if (!values.key || file === undefined || positionals.length !== 1) throw new TypeError(`usage: ${SUBMIT_USAGE}`);
  const job = JSON.parse(readFileSync(file === '-' ? 0 : file, 'utf8')) as Record<string, unknown>;
  const { body, signature } = signRequestBody(readKeyFile(values.key).secretKey, job);
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-idn-signature': signature };
  if (values.delegation) headers['x-svc-delegation-cert'] = readFileSync(values.delegation, 'utf8').trim();
  const res = await fetch(new URL('/v1/compute', values.url), {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    answer = { status: res.status, body: text.slice(0, 2000) };
  }
  out(answer);
  return res.ok ? 0 : 1;
}
