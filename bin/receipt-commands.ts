import { readFile, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { isOpenEoReceipt, verifyOpenEoReceipt } from '../core/openeo/receipt.js';
import { verifyReceipt, type JobReceipt, type ReceiptVerdict } from '../core/receipt.js';
import { RECOMPUTE_EXIT, recomputeExitCode, recomputeLine, type StepRecomputation } from '../core/receipt-recompute.js';
import { loadConfig } from './config.js';
import type { AnchoredVerdict } from './receipt-anchor.js';
import { createProgress, type ProgressStream } from './progress.js';
import { DEFAULT_URL } from './submit.js';

export const RECEIPT_USAGE =
  'receipt verify RECEIPT.json [--sealer-pk HEX] [--allow-pending] [--json] [--anchor [--horizon URL]] [--recompute [--allow-http] [--allow-private] [--tile-url [STYLE=]TEMPLATE]...] | receipt get JOB_ID [--url BASE] [-o FILE] [--wait-sealed [--timeout SECONDS]]';

export interface ReceiptCommandIo {
  log(line: string): void;
  error(line: string): void;
  /** Injected for tests; default global fetch. */
  fetch?: typeof fetch;
  /** Pause between polls of `--wait-sealed`; default a real timer. */
  sleep?: (ms: number) => Promise<void>;
  /** Where `--wait-sealed` reports progress; default process.stderr. */
  progress?: ProgressStream;
}

const HEX64 = /^[0-9a-f]{64}$/;
const POLL_MS = 5_000;
/** `--wait-sealed` without `--timeout`: two hours, enough for an hourly epoch to close and be sealed. */
const DEFAULT_WAIT_S = 7_200;

/**
 * `geofabric receipt verify|get` (docs/protocol.md §15). `verify` checks a receipt file offline with core/ only
 * and prints one line per check (or the verdict as JSON); `--anchor` adds the ledger check (bin/receipt-anchor.ts,
 * network). `get` fetches `BASE/v1/compute/JOB_ID/receipt`, with `--wait-sealed` asking again (progress on
 * stderr) until it is sealed. Exit codes: 0 valid (get: fetched, and sealed when waiting), 1 invalid (get: still
 * pending after the wait, or an error answer), 2 usage, an unreadable file or (get) the gateway unreachable.
 * `verify --recompute` then recomputes each step from its public inputs (bin/receipt-recompute.ts), one line per
 * step, and adds exit codes 3 (a step differs) and 4 (inputs unavailable or an upstream changed;
 * core/receipt-recompute.ts).
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
        anchor: { type: 'boolean', default: false },
        horizon: { type: 'string' },
        recompute: { type: 'boolean', default: false },
        'allow-http': { type: 'boolean', default: false },
        'allow-private': { type: 'boolean', default: false },
        'tile-url': { type: 'string', multiple: true },
      },
    });
  } catch (error) {
    return usage(io, (error as Error).message);
  }
  const [file, ...extra] = parsed.positionals;
  const recompute = parsed.values.recompute;
  const fetchPolicy = parsed.values['allow-http'] || parsed.values['allow-private'] || parsed.values['tile-url'];
  if (fetchPolicy && !recompute) return usage(io, '--allow-http, --allow-private and --tile-url go with --recompute');
  if (file === undefined || extra.length > 0) return usage(io, 'one receipt file');
  if (parsed.values.horizon !== undefined && !parsed.values.anchor) return usage(io, '--horizon goes with --anchor');
  const sealerPk = parsed.values['sealer-pk'];
  if (sealerPk !== undefined && !HEX64.test(sealerPk)) return usage(io, '--sealer-pk is 64 lowercase hex');
  let receipt: unknown;
  try {
    receipt = JSON.parse(await readFile(file === '-' ? '/dev/stdin' : file, 'utf8'));
  } catch (error) {
    io.error(`cannot read ${file}: ${(error as Error).message}`);
    return 2;
  }
  // Recomputation knows a job receipt's step types (docs/protocol.md §15.4), not an openEO job's graphs.
  if (recompute && isOpenEoReceipt(receipt)) return usage(io, '--recompute takes a job receipt, not an openEO one');
  const options = { allowPending: parsed.values['allow-pending'], ...(sealerPk === undefined ? {} : { sealerPk }) };
  // An openEO batch job's receipt (docs/protocol.md §16.12) has checks of its own; its records, seals and anchors
  // have a job receipt's shapes, so the ledger check below reads them alike. The verdicts differ only in names.
  const offline = isOpenEoReceipt(receipt)
    ? (verifyOpenEoReceipt(receipt, options) as unknown as ReceiptVerdict)
    : verifyReceipt(receipt, options);
  let verdict: AnchoredVerdict = offline;
  if (parsed.values.anchor) {
    // HORIZON_URL alone is read (not the whole configuration): a verifier needs no server settings.
    const horizonUrl = parsed.values.horizon ?? loadConfig({ HORIZON_URL: process.env.HORIZON_URL }).ledger.horizonUrl;
    // Loaded only here: the ledger client (Stellar SDK) is not needed offline.
    const { withLedgerAnchors } = await import('./receipt-anchor.js');
    verdict = await withLedgerAnchors(receipt as JobReceipt, offline, horizonUrl);
  }
  // Recomputation fetches what the receipt names: only once the offline checks trust it (docs/protocol.md §15.6).
  let steps: StepRecomputation[] | null = null;
  if (recompute && verdict.ok) {
    const { recomputeWithPolicy, tileTemplates } = await import('./receipt-recompute.js');
    steps = await recomputeWithPolicy(receipt as JobReceipt, {
      allowHttp: parsed.values['allow-http'],
      allowPrivate: parsed.values['allow-private'],
      tileTemplates: tileTemplates(parsed.values['tile-url'] ?? []),
    });
  }
  if (parsed.values.json) io.log(JSON.stringify({ file, ...verdict, ...(steps ? { recompute: steps } : {}) }, null, 2));
  else {
    for (const line of report(file, receipt, verdict)) io.log(line);
    if (recompute && !verdict.ok) io.log('recompute: not run (the offline verification failed)');
    for (const step of steps ?? []) io.log(`  ${recomputeLine(step)}`);
  }
  if (!verdict.ok) return RECOMPUTE_EXIT.invalid;
  return steps ? recomputeExitCode(steps) : 0;
}

function report(file: string, receipt: unknown, verdict: AnchoredVerdict): string[] {
  const r = (typeof receipt === 'object' && receipt !== null ? receipt : {}) as Record<string, unknown>;
  const width = Math.max(...verdict.checks.map((c) => c.name.length));
  return [
    `receipt ${file}: job ${String(r.job_id)} (${String(r.status)})`,
    ...verdict.checks.map((c) => `  ${c.ok ? 'ok  ' : 'FAIL'} ${c.name.padEnd(width)}  ${c.detail}`),
    verdict.ok ? 'valid' : `INVALID: ${verdict.failedCheck}`,
  ];
}

async function getCommand(args: string[], io: ReceiptCommandIo): Promise<number> {
  // `--wait-sealed N` (its first form) is `--wait-sealed --timeout N`.
  const at = args.indexOf('--wait-sealed');
  if (at >= 0 && /^\d+$/.test(args[at + 1] ?? ''))
    args = [...args.slice(0, at + 1), '--timeout', ...args.slice(at + 1)];
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        url: { type: 'string', default: DEFAULT_URL },
        o: { type: 'string', short: 'o' },
        'wait-sealed': { type: 'boolean', default: false },
        timeout: { type: 'string' },
      },
    });
  } catch (error) {
    return usage(io, (error as Error).message);
  }
  const [jobId, ...extra] = parsed.positionals;
  const wait = parsed.values['wait-sealed'];
  const timeout = parsed.values.timeout ?? String(DEFAULT_WAIT_S);
  if (jobId === undefined || extra.length > 0) return usage(io, 'one job id');
  if (!/^\d{1,7}$/.test(timeout)) return usage(io, '--timeout is whole seconds');
  const doFetch = io.fetch ?? fetch;
  const sleep = io.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const url = `${parsed.values.url.replace(/\/+$/, '')}/v1/compute/${encodeURIComponent(jobId)}/receipt`;
  const deadline = Date.now() + Number(timeout) * 1000;
  // Epochs seal hourly: a wait can be long, so it shows it is alive (stderr, stdout stays the receipt).
  const progress = wait
    ? createProgress({
        label: `receipt ${jobId}`,
        unit: 'polls, pending',
        everyItems: 1,
        ...(io.progress ? { stream: io.progress } : {}),
      })
    : null;
  for (;;) {
    let res: Response;
    try {
      res = await doFetch(url);
    } catch (error) {
      progress?.stop();
      io.error(`cannot reach ${url}: ${(error as Error).message}`);
      return 2;
    }
    const text = await res.text();
    if (!res.ok) {
      progress?.stop();
      io.error(`${res.status} ${text.slice(0, 500)}`);
      return 1;
    }
    const status = (JSON.parse(text) as { status?: unknown }).status;
    const waiting = wait && status === 'pending';
    if (!waiting || Date.now() >= deadline) {
      progress?.done(waiting ? `still pending after ${timeout} s` : String(status));
      if (parsed.values.o) {
        await writeFile(parsed.values.o, text.endsWith('\n') ? text : `${text}\n`);
        io.error(`receipt of job ${jobId} (${String(status)}) written to ${parsed.values.o}`);
      } else io.log(text);
      return waiting ? 1 : 0;
    }
    progress?.tick();
    await sleep(Math.min(POLL_MS, Math.max(0, deadline - Date.now())));
  }
}

function usage(io: ReceiptCommandIo, reason: string): number {
  io.error(`usage: geofabric ${RECEIPT_USAGE}\n  ${reason}`);
  return 2;
}
