/**
 * The few Horizon endpoints settlement and anchoring need, over plain fetch: load an account's
 * sequence, submit a signed envelope, look a transaction up by hash, page an account's transactions (to
 * find one by memo) and read a transaction's operations. Envelopes are built and signed elsewhere with the
 * SDK; this client only moves base64 XDR and parses Horizon's JSON with zod.
 *
 * Every call is bounded by a timeout. Failures are HorizonErrors: `transient` (network error, timeout, 429,
 * 5xx: the outcome of a submit is then unknown and the caller must look the hash up before resubmitting)
 * or not (4xx; a refused submit carries Horizon's `result_codes`).
 */
import { z } from 'zod';
import { safeFetch, sameOriginOnly } from '../safe-fetch.js';

export const DEFAULT_HORIZON_TIMEOUT_MS = 10_000;
/** Horizon holds a submit until the ledger closes (and answers 504 after ~30 s): give it longer. */
export const DEFAULT_HORIZON_SUBMIT_TIMEOUT_MS = 45_000;

export interface HorizonClientConfig {
  /** Horizon root, e.g. https://horizon-testnet.stellar.org (a trailing slash is dropped). */
  url: string;
  timeoutMs?: number;
  submitTimeoutMs?: number;
}

export interface HorizonResultCodes {
  transaction?: string;
  operations?: string[];
}

export class HorizonError extends Error {
  constructor(
    message: string,
    /** HTTP status; 0 for a network error or timeout. */
    readonly status: number,
    /** True when retrying may succeed and, for a submit, the transaction may have landed anyway. */
    readonly transient: boolean,
    readonly resultCodes: HorizonResultCodes | null = null,
  ) {
    super(message);
    this.name = 'HorizonError';
  }

  /** The envelope's sequence number is not the account's next one (it was used, or is from the future). */
  get badSeq(): boolean {
    return this.resultCodes?.transaction === 'tx_bad_seq';
  }
}

const transactionSchema = z.object({
  hash: z.string().regex(/^[0-9a-f]{64}$/),
  ledger: z.number().int().nonnegative(),
  successful: z.boolean(),
  source_account: z.string(),
  memo_type: z.string(),
  /** base64 for memo_type `hash` / `return`. */
  memo: z.string().optional(),
  paging_token: z.string(),
  created_at: z.string().optional(),
  envelope_xdr: z.string().optional(),
});
export type HorizonTransaction = z.infer<typeof transactionSchema>;

const operationSchema = z.object({
  type: z.string(),
  source_account: z.string().optional(),
  transaction_hash: z.string().optional(),
  // manage_data
  name: z.string().optional(),
  value: z.string().nullable().optional(),
  // payment
  from: z.string().optional(),
  to: z.string().optional(),
  amount: z.string().optional(),
  asset_type: z.string().optional(),
  asset_code: z.string().optional(),
  asset_issuer: z.string().optional(),
});
export type HorizonOperation = z.infer<typeof operationSchema>;

const accountSchema = z.object({ id: z.string(), sequence: z.string().regex(/^\d+$/) });
const submitSchema = z.object({ hash: z.string().regex(/^[0-9a-f]{64}$/), ledger: z.number().int().nonnegative() });
const problemSchema = z.object({
  title: z.string().optional(),
  detail: z.string().optional(),
  extras: z
    .object({
      result_codes: z
        .object({ transaction: z.string().optional(), operations: z.array(z.string()).optional() })
        .optional(),
    })
    .optional(),
});
const pageSchema = <T extends z.ZodType>(record: T) =>
  z.object({
    _embedded: z.object({ records: z.array(record) }),
    _links: z.object({ next: z.object({ href: z.string() }).optional() }).optional(),
  });
const transactionPageSchema = pageSchema(transactionSchema);
const operationPageSchema = pageSchema(operationSchema);

export interface HorizonClient {
  readonly url: string;
  /** The account's current sequence number (decimal string; the next transaction uses it + 1). */
  accountSequence(accountId: string): Promise<string>;
  /** Submits a signed envelope (base64 XDR); resolves once Horizon reports it in a ledger. */
  submit(envelopeXdr: string): Promise<{ hash: string; ledger: number }>;
  /** A transaction by hash (hex); null when Horizon does not know it (404). Failed transactions are returned. */
  transaction(hash: string): Promise<HorizonTransaction | null>;
  /** One page of the account's transactions (newest first by default) and the cursor of the next page. */
  accountTransactions(
    accountId: string,
    page?: { limit?: number; cursor?: string; order?: 'asc' | 'desc' },
  ): Promise<{ records: HorizonTransaction[]; next: string | null }>;
  /**
   * The newest successful transaction of `accountId` whose memo is the hash `memoHex`, searching at most
   * `maxRecords` of its latest transactions; null when none.
   */
  findByMemoHash(accountId: string, memoHex: string, maxRecords?: number): Promise<HorizonTransaction | null>;
  /** The operations of a transaction, in order; null when Horizon does not know the transaction. */
  operations(hash: string): Promise<HorizonOperation[] | null>;
}

/** Memo search depth: a settlement looks for its memo among this many of the payer's latest transactions. */
export const DEFAULT_MEMO_SEARCH_RECORDS = 400;

export function createHorizonClient(config: HorizonClientConfig): HorizonClient {
  const root = config.url.replace(/\/+$/, '');
  const timeoutMs = config.timeoutMs ?? DEFAULT_HORIZON_TIMEOUT_MS;
  const submitTimeoutMs = config.submitTimeoutMs ?? DEFAULT_HORIZON_SUBMIT_TIMEOUT_MS;

  async function request(
    path: string,
    init: { method?: string; body?: string; timeoutMs?: number } = {},
  ): Promise<{ status: number; json: unknown }> {
    let res: Response;
    let text: string;
    try {
      // Redirects stay on Horizon's origin (activities/safe-fetch.ts): a submission goes nowhere else.
      res = await safeFetch(
        `${root}${path}`,
        {
          method: init.method ?? 'GET',
          headers: {
            accept: 'application/hal+json, application/json',
            ...(init.body !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
          },
          body: init.body,
          signal: AbortSignal.timeout(init.timeoutMs ?? timeoutMs),
        },
        sameOriginOnly(root),
      );
      text = await res.text(); // still under the same signal: a stalled body times out too
    } catch (error) {
      const reason = error instanceof Error && error.name === 'TimeoutError' ? 'timed out' : 'unreachable';
      throw new HorizonError(`horizon ${reason}: ${describe(error)}`, 0, true);
    }
    let json: unknown = null;
    if (text !== '') {
      try {
        json = JSON.parse(text);
      } catch {
        if (res.ok) throw new HorizonError(`horizon returned non-JSON for ${path}`, res.status, true);
      }
    }
    return { status: res.status, json };
  }

  function failure(path: string, status: number, json: unknown): HorizonError {
    const problem = problemSchema.safeParse(json);
    const codes = problem.success ? (problem.data.extras?.result_codes ?? null) : null;
    const title = problem.success ? (problem.data.title ?? '') : '';
    const transient = status === 429 || status >= 500;
    const codeText = codes?.transaction ? ` ${codes.transaction}` : '';
    const opsText = codes?.operations?.length ? ` [${codes.operations.join(',')}]` : '';
    return new HorizonError(
      `horizon ${status} ${title}${codeText}${opsText} (${path})`.trim(),
      status,
      transient,
      codes,
    );
  }

  function parse<T>(schema: z.ZodType<T>, json: unknown, path: string, status: number): T {
    const parsed = schema.safeParse(json);
    if (!parsed.success) throw new HorizonError(`horizon answered ${path} with an unexpected shape`, status, true);
    return parsed.data;
  }

  const accountTransactions: HorizonClient['accountTransactions'] = async (accountId, page = {}) => {
    const params = new URLSearchParams({ order: page.order ?? 'desc', limit: String(page.limit ?? 200) });
    if (page.cursor !== undefined) params.set('cursor', page.cursor);
    const path = `/accounts/${encodeURIComponent(accountId)}/transactions?${params}`;
    const { status, json } = await request(path);
    if (status === 404) return { records: [], next: null };
    if (status !== 200) throw failure(path, status, json);
    const body = parse(transactionPageSchema, json, path, status);
    const last = body._embedded.records.at(-1);
    return { records: body._embedded.records, next: last === undefined ? null : last.paging_token };
  };

  return {
    url: root,

    async accountSequence(accountId) {
      const path = `/accounts/${encodeURIComponent(accountId)}`;
      const { status, json } = await request(path);
      if (status !== 200) throw failure(path, status, json);
      return parse(accountSchema, json, path, status).sequence;
    },

    async submit(envelopeXdr) {
      const path = '/transactions';
      const { status, json } = await request(path, {
        method: 'POST',
        body: `tx=${encodeURIComponent(envelopeXdr)}`,
        timeoutMs: submitTimeoutMs,
      });
      if (status !== 200) throw failure(path, status, json);
      return parse(submitSchema, json, path, status);
    },

    async transaction(hash) {
      const path = `/transactions/${encodeURIComponent(hash)}`;
      const { status, json } = await request(path);
      if (status === 404) return null;
      if (status !== 200) throw failure(path, status, json);
      return parse(transactionSchema, json, path, status);
    },

    accountTransactions,

    async findByMemoHash(accountId, memoHex, maxRecords = DEFAULT_MEMO_SEARCH_RECORDS) {
      const memo = Buffer.from(memoHex, 'hex').toString('base64');
      let cursor: string | undefined;
      for (let seen = 0; seen < maxRecords;) {
        const limit = Math.min(200, maxRecords - seen);
        const page = await accountTransactions(accountId, { limit, cursor, order: 'desc' });
        const hit = page.records.find((tx) => tx.successful && tx.memo_type === 'hash' && tx.memo === memo);
        if (hit !== undefined) return hit;
        seen += page.records.length;
        if (page.records.length < limit || page.next === null) return null;
        cursor = page.next;
      }
      return null;
    },

    async operations(hash) {
      const path = `/transactions/${encodeURIComponent(hash)}/operations?limit=200&order=asc`;
      const { status, json } = await request(path);
      if (status === 404) return null;
      if (status !== 200) throw failure(path, status, json);
      return parse(operationPageSchema, json, path, status)._embedded.records;
    },
  };
}

const describe = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof Error ? `${error.message} (${cause.message})` : error.message;
};
