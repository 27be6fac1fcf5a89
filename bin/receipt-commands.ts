import { readFile, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { verifyReceipt, type ReceiptVerdict } from '../core/receipt.js';

export const RECEIPT_USAGE =
  'receipt verify RECEIPT.json [--sealer-pk HEX] [--allow-pending] [--json] | receipt get JOB_ID --url BASE [-o FILE] [--wait-sealed SECONDS]';

export interface ReceiptCommandIo {
  log(line: string): void;
  error(line: string): void;
  /** Injected for tests; default global fetch. */
  fetch?: typeof fetch;
  /** Pause between polls of `--wait-sealed`; default a real timer. */
  sleep?: (ms: number) => Promise<void>;
}

const HEX64 = /^[0-9a-f]{64}$/;
const POLL_MS = 5_000;

/**
 * `geofabric receipt verify|get` (docs/protocol.md §15). `verify` checks a receipt file offline with core/ only
 * and prints one line per check (or the verdict as JSON); `get` fetches `BASE/v1/compute/JOB_ID/receipt`,
 * optionally asking again until it is sealed. Exit codes: 0 valid (get: fetched, and sealed when waiting),
 * 1 invalid (get: still pending after the wait, or an error answer), 2 usage or an unreadable file.
 */
export async function receiptCommand(argv: string[], io: ReceiptCommandIo): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === 'verify') return verifyCommand(rest, io);
  if (sub === 'get') return getCommand(rest, io);
  io.error(`usage: geofabric ${RECEIPT_USAGE}`);
  return 2;
}

async function verifyCommand(args: string[], io: ReceiptCommandIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        'sealer-pk': { type: 'string' },
        'allow-pending': { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
      },
    });
  } catch (error) {
    return usage(io, (error as Error).message);
  }
  const [file, ...extra] = parsed.positionals;
  if (file === undefined || extra.length > 0) return usage(io, 'one receipt file');
  const sealerPk = parsed.values['sealer-pk'];
  if (sealerPk !== undefined && !HEX64.test(sealerPk)) return usage(io, '--sealer-pk is 64 lowercase hex');
  let receipt: unknown;
  try {
    receipt = JSON.parse(await readFile(file === '-' ? '/dev/stdin' : file, 'utf8'));
  } catch (error) {
    io.error(`cannot read ${file}: ${(error as Error).message}`);
    return 2;
  }
  const verdict = verifyReceipt(receipt, {
    allowPending: parsed.values['allow-pending'],
    ...(sealerPk === undefined ? {} : { sealerPk }),
  });
  if (parsed.values.json) io.log(JSON.stringify({ file, ...verdict }, null, 2));
  else for (const line of report(file, receipt, verdict)) io.log(line);
  return verdict.ok ? 0 : 1;
}

function report(file: string, receipt: unknown, verdict: ReceiptVerdict): string[] {
  const r = (typeof receipt === 'object' && receipt !== null ? receipt : {}) as Record<string, unknown>;
  const width = Math.max(...verdict.checks.map((c) => c.name.length));
  return [
    `receipt ${file}: job ${String(r.job_id)} (${String(r.status)})`,
    ...verdict.checks.map((c) => `  ${c.ok ? 'ok  ' : 'FAIL'} ${c.name.padEnd(width)}  ${c.detail}`),
    verdict.ok ? 'valid' : `INVALID: ${verdict.failedCheck}`,
  ];
}

async function getCommand(args: string[], io: ReceiptCommandIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: { url: { type: 'string' }, o: { type: 'string', short: 'o' }, 'wait-sealed': { type: 'string' } },
    });
  } catch (error) {
    return usage(io, (error as Error).message);
  }
  const [jobId, ...extra] = parsed.positionals;
  const wait = parsed.values['wait-sealed'];
  if (jobId === undefined || extra.length > 0 || !parsed.values.url) return usage(io, 'a job id and --url');
  if (wait !== undefined && !/^\d{1,6}$/.test(wait)) return usage(io, '--wait-sealed is whole seconds');
  const doFetch = io.fetch ?? fetch;
  const sleep = io.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const url = `${parsed.values.url.replace(/\/+$/, '')}/v1/compute/${encodeURIComponent(jobId)}/receipt`;
  const deadline = Date.now() + Number(wait ?? 0) * 1000;
  for (;;) {
    const res = await doFetch(url);
    const text = await res.text();
    if (!res.ok) {
      io.error(`${res.status} ${text.slice(0, 500)}`);
      return 1;
    }
    const status = (JSON.parse(text) as { status?: unknown }).status;
    const waiting = wait !== undefined && status === 'pending';
    if (!waiting || Date.now() >= deadline) {
      if (parsed.values.o) {
        await writeFile(parsed.values.o, text.endsWith('\n') ? text : `${text}\n`);
        io.error(`receipt of job ${jobId} (${String(status)}) written to ${parsed.values.o}`);
      } else io.log(text);
      return waiting ? 1 : 0;
    }
    await sleep(Math.min(POLL_MS, Math.max(0, deadline - Date.now())));
  }
}

function usage(io: ReceiptCommandIo, reason: string): number {
  io.error(`usage: geofabric ${RECEIPT_USAGE}\n  ${reason}`);
  return 2;
}
