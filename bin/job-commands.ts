import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { signRequestBody } from '../core/gates/signature.js';
import { readKeyFile } from './key-file.js';
import { createProgress, type ProgressStream } from './progress.js';
import { callGateway, DEFAULT_URL, delegationHeaderOf, submitSignedJob, type GatewayAnswer } from './submit.js';

export const JOB_USAGE = `job submit JOB.json --key FILE [--url BASE] [--cert FILE] [--wait] [--timeout SECONDS]
  job get JOB_ID [--url BASE]
  job list --key FILE | --operator-token TOKEN [--url BASE] [--limit N]`;

/**
 * Exit codes of `geofabric job …` (docs/guide.md "Clients and receipts"): the outcome of the job, so a script
 * branches without parsing JSON.
 */
export const JOB_EXIT = {
  /** The job completed (get/list: answered). */
  complete: 0,
  /** The job ran and failed (a step failed, the budget ran out …); the job with its error is printed. */
  failed: 1,
  /** Usage error, unreadable file or key, or the gateway could not be reached. */
  usage: 2,
  /** Still running: the gateway's wait ran out (504 job_timeout) without --wait, or --timeout ran out. */
  running: 3,
  /** Refused before it ran (invalid request, signature, delegation, budget, unknown job …). */
  refused: 4,
} as const;

export interface JobCommandIo {
  /** Stdout: the job as JSON. */
  log(line: string): void;
  /** Stderr: errors and progress lines. */
  error(line: string): void;
  /** Where progress goes; default process.stderr. */
  progress?: ProgressStream;
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
}

const POLL_MS = 2_000;
const DEFAULT_TIMEOUT_S = 3_600;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export async function jobCommand(argv: string[], io: JobCommandIo): Promise<number> {
  const [sub, ...rest] = argv;
  try {
    if (sub === 'submit') return await submit(rest, io);
    if (sub === 'get') return await get(rest, io);
    if (sub === 'list') return await list(rest, io);
    return usage(io, `unknown subcommand ${JSON.stringify(sub ?? '')}`);
  } catch (error) {
    if (error instanceof UsageError) return usage(io, error.message);
    // fetch failed: the gateway is down or the URL is wrong.
    io.error(`geofabric job ${sub}: ${describe(error)}`);
    return JOB_EXIT.usage;
  }
}

class UsageError extends Error {}

function usage(io: JobCommandIo, reason: string): number {
  io.error(`usage: geofabric ${JOB_USAGE}\n  ${reason}`);
  return JOB_EXIT.usage;
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ? `${(error as Error).message} (${cause.code})` : (error as Error).message;
}

/** parseArgs, its complaints as usage errors. */
function parse<T>(run: () => T): T {
  try {
    return run();
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

async function submit(args: string[], io: JobCommandIo): Promise<number> {
  const { values, positionals } = parse(() =>
    parseArgs({
      args,
      allowPositionals: true,
      options: {
        key: { type: 'string' },
        url: { type: 'string', default: DEFAULT_URL },
        cert: { type: 'string' },
        wait: { type: 'boolean', default: false },
        timeout: { type: 'string' },
      },
    }),
  );
  const [file, ...extra] = positionals;
  if (file === undefined || extra.length > 0 || typeof values.key !== 'string') {
    throw new UsageError('one JOB.json and --key');
  }
  const timeoutS = seconds(values.timeout, DEFAULT_TIMEOUT_S);
  let job: Obj;
  let secretKey: string;
  let delegationHeader: string | undefined;
  try {
    const parsed = JSON.parse(await readFile(file === '-' ? '/dev/stdin' : file, 'utf8')) as unknown;
    if (!isObj(parsed)) throw new Error('a job is a JSON object');
    job = parsed;
    secretKey = readKeyFile(values.key).secretKey;
    if (typeof values.cert === 'string') delegationHeader = delegationHeaderOf(values.cert);
  } catch (error) {
    io.error(`cannot read the job, key or certificate: ${(error as Error).message}`);
    return JOB_EXIT.usage;
  }
  const url = String(values.url);
  const answer = await submitSignedJob(job, {
    secretKey,
    url,
    ...(delegationHeader === undefined ? {} : { delegationHeader }),
    ...(io.fetch ? { fetch: io.fetch } : {}),
  });
  const body = isObj(answer.body) ? answer.body : {};
  if (answer.status === 504 && body.error === 'job_timeout' && typeof body.job_id === 'string') {
    if (values.wait !== true) {
      io.log(JSON.stringify(answer.body, null, 2));
      io.error(`job ${body.job_id} is still running: \`geofabric job get ${body.job_id}\` or submit with --wait`);
      return JOB_EXIT.running;
    }
    return waitForJob(url, body.job_id, timeoutS, io);
  }
  return printOutcome(answer, io);
}

/** Polls GET /v1/compute/:id while the job runs (the gateway's own wait ran out), with progress on stderr. */
async function waitForJob(url: string, jobId: string, timeoutS: number, io: JobCommandIo): Promise<number> {
  const sleep = io.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const deadline = Date.now() + timeoutS * 1000;
  const progress = createProgress({
    label: `job ${jobId}`,
    unit: 'polls, running',
    everyItems: 1,
    ...(io.progress ? { stream: io.progress } : {}),
  });
  for (;;) {
    const answer = await callGateway(jobUrl(url, jobId), {}, io.fetch);
    const status = isObj(answer.body) ? answer.body.status : undefined;
    if (answer.status !== 200 || status !== 'running') {
      progress.done(String(status ?? answer.status));
      return printOutcome(answer, io);
    }
    if (Date.now() >= deadline) {
      progress.done(`still running after ${timeoutS} s`);
      io.log(JSON.stringify(answer.body, null, 2));
      return JOB_EXIT.running;
    }
    progress.tick();
    await sleep(Math.min(POLL_MS, Math.max(0, deadline - Date.now())));
  }
}

/** Prints the job (or the error) and maps it to an exit code. */
function printOutcome(answer: GatewayAnswer, io: JobCommandIo): number {
  io.log(JSON.stringify(answer.body, null, 2));
  const body = isObj(answer.body) ? answer.body : {};
  if (answer.status === 200) {
    if (body.status === 'running') return JOB_EXIT.running;
    return body.status === 'failed' ? JOB_EXIT.failed : JOB_EXIT.complete;
  }
  // A job that ran and failed answers its error with the job (docs/protocol.md §2.3); a refusal has no job.
  if (isObj(body.job)) {
    io.error(`job ${String(body.job_id)} failed: ${String(body.error)}: ${String(body.detail)}`);
    return JOB_EXIT.failed;
  }
  io.error(`refused (${answer.status}): ${String(body.error ?? '')} ${String(body.detail ?? '')}`.trimEnd());
  return JOB_EXIT.refused;
}

async function get(args: string[], io: JobCommandIo): Promise<number> {
  const { values, positionals } = parse(() =>
    parseArgs({ args, allowPositionals: true, options: { url: { type: 'string', default: DEFAULT_URL } } }),
  );
  const [jobId, ...extra] = positionals;
  if (jobId === undefined || extra.length > 0) throw new UsageError('one JOB_ID');
  return printOutcome(await callGateway(jobUrl(String(values.url), jobId), {}, io.fetch), io);
}

async function list(args: string[], io: JobCommandIo): Promise<number> {
  const { values, positionals } = parse(() =>
    parseArgs({
      args,
      allowPositionals: true,
      options: {
        url: { type: 'string', default: DEFAULT_URL },
        key: { type: 'string' },
        'operator-token': { type: 'string' },
        limit: { type: 'string' },
      },
    }),
  );
  if (positionals.length > 0) throw new UsageError('job list takes no arguments');
  const query = new URLSearchParams();
  if (values.limit !== undefined) query.set('limit', String(values.limit));
  const headers: Record<string, string> = {};
  if (typeof values['operator-token'] === 'string') headers.authorization = `Bearer ${values['operator-token']}`;
  else if (typeof values.key === 'string') {
    // A signed listing: requester_pk and created_at (and a nonce) signed like a request (docs/protocol.md §2.3).
    let secretKey: string;
    try {
      secretKey = readKeyFile(values.key).secretKey;
    } catch (error) {
      io.error(`cannot read the key: ${(error as Error).message}`);
      return JOB_EXIT.usage;
    }
    const signed = signRequestBody(secretKey, { created_at: new Date().toISOString() });
    query.set('requester_pk', signed.body.requester_pk);
    query.set('created_at', signed.body.created_at);
    headers['x-idn-signature'] = signed.signature;
  }
  const url = `${String(values.url).replace(/\/+$/, '')}/v1/compute/recent${query.size > 0 ? `?${query}` : ''}`;
  const answer = await callGateway(url, { headers }, io.fetch);
  io.log(JSON.stringify(answer.body, null, 2));
  if (answer.status === 200) return JOB_EXIT.complete;
  io.error(`refused (${answer.status})`);
  return JOB_EXIT.refused;
}

const jobUrl = (base: string, jobId: string) => `${base.replace(/\/+$/, '')}/v1/compute/${encodeURIComponent(jobId)}`;

function seconds(value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !/^\d{1,7}$/.test(value)) throw new UsageError('--timeout is whole seconds');
  return Number(value);
}
