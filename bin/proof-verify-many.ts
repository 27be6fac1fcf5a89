import { createProgress, type ProgressStream } from './progress.js';
import { verifyRecordAt, type AnchorCheck, type RecordVerdict, type VerifyOptions } from './record-verifier.js';

/**
 * `proof verify` of many records: the ids given, or with `--all` every record `/store/query` lists (filtered by
 * cell, epoch, collection), each verified offline exactly as one record is. The listing is paged first, so the
 * verification knows its total (a bar with an ETA); proofs are then fetched a few at a time.
 */
export interface ManySelection {
  ids?: readonly string[];
  /** `/store/query` filters for `--all`. */
  query?: { cell?: string; epoch?: number; collection?: string };
}

export interface ManyOptions extends VerifyOptions {
  /** Unsealed records (pending) do not fail the run; they are still counted and listed. */
  allowPending?: boolean;
  concurrency?: number;
  progress?: ProgressStream;
}

export interface ManyReport {
  verified: boolean;
  records: number;
  ok: number;
  failed: number;
  pending: number;
  failures: { record_id: string; problems: string[] }[];
  /** The first MAX_LISTED_PENDING pending ids. */
  pending_ids: string[];
  /** Set when the listing itself failed (nothing was verified past that point). */
  listing_error?: string;
}

const QUERY_PAGE = 1000;
const MAX_LISTED_PENDING = 100;
const DEFAULT_CONCURRENCY = 8;

export async function verifyMany(baseUrl: string, selection: ManySelection, options: ManyOptions = {}) {
  const listed = selection.ids
    ? { records: selection.ids.map((id) => ({ id, record_hash: undefined })), error: undefined }
    : await listRecords(baseUrl, selection.query ?? {}, options.progress);
  const report: ManyReport = {
    verified: false,
    records: listed.records.length,
    ok: 0,
    failed: 0,
    pending: 0,
    failures: [],
    pending_ids: [],
    ...(listed.error === undefined ? {} : { listing_error: listed.error }),
  };
  const progress = createProgress({
    label: 'proof verify',
    unit: 'records',
    total: listed.records.length,
    ...(options.progress ? { stream: options.progress } : {}),
  });
  const verifyOptions: VerifyOptions = {
    ...options,
    anchorCache: options.anchorCache ?? new Map<string, Promise<AnchorCheck>>(),
  };
  const verdicts: RecordVerdict[] = new Array<RecordVerdict>(listed.records.length);
  let next = 0;
  const worker = async () => {
    while (next < listed.records.length) {
      const index = next++;
      const { id, record_hash } = listed.records[index]!;
      verdicts[index] = await verifyListed(baseUrl, id, record_hash, verifyOptions);
      progress.tick();
    }
  };
  try {
    const lanes = Math.max(1, Math.min(options.concurrency ?? DEFAULT_CONCURRENCY, listed.records.length));
    await Promise.all(Array.from({ length: lanes }, worker));
  } catch (error) {
    progress.stop();
    throw error;
  }
  // In listing order, whatever order the answers came in: the report is the same for the same store.
  for (const verdict of verdicts) {
    if (verdict.pending && options.allowPending) {
      report.pending += 1;
      if (report.pending_ids.length < MAX_LISTED_PENDING) report.pending_ids.push(verdict.record_id);
    } else if (verdict.verified) {
      report.ok += 1;
    } else {
      if (verdict.pending) report.pending += 1;
      report.failed += 1;
      report.failures.push({ record_id: verdict.record_id, problems: verdict.problems });
    }
  }
  report.verified = report.failed === 0 && listed.error === undefined;
  progress.done(`${report.ok} verified, ${report.failed} failed, ${report.pending} pending`);
  return report;
}

/** One record; a proof of another record_hash than the listing showed is a problem too. */
async function verifyListed(
  baseUrl: string,
  id: string,
  listedHash: string | undefined,
  options: VerifyOptions,
): Promise<RecordVerdict> {
  try {
    return await verifyRecordAt(baseUrl, id, options, listedHash);
  } catch (error) {
    // One unreachable or garbled answer fails that record, not the run.
    return { record_id: id, verified: false, problems: [`fetching the proof failed: ${(error as Error).message}`] };
  }
}

interface Listed {
  id: string;
  record_hash: string | undefined;
}

async function listRecords(
  baseUrl: string,
  query: NonNullable<ManySelection['query']>,
  stream: ProgressStream | undefined,
): Promise<{ records: Listed[]; error: string | undefined }> {
  const progress = createProgress({ label: 'proof verify: listing', unit: 'records', ...(stream ? { stream } : {}) });
  const records: Listed[] = [];
  const seen = new Set<string>();
  let cursor: string | null = null;
  try {
    do {
      const url = new URL('/store/query', baseUrl);
      url.searchParams.set('limit', String(QUERY_PAGE));
      if (query.cell !== undefined) url.searchParams.set('cell', query.cell);
      if (query.epoch !== undefined) {
        url.searchParams.set('epoch_start', String(query.epoch));
        url.searchParams.set('epoch_end', String(query.epoch));
      }
      if (query.collection !== undefined) url.searchParams.set('collection', query.collection);
      if (cursor !== null) url.searchParams.set('cursor', cursor);
      const res = await fetch(url);
      const body = (await res.json().catch(() => ({}))) as {
        records?: { id?: unknown; record_hash?: unknown }[];
        next_cursor?: unknown;
        error?: string;
      };
      if (!res.ok || !Array.isArray(body.records)) {
        progress.stop();
        return { records, error: `listing: server answered ${res.status} ${body.error ?? ''}`.trim() };
      }
      for (const record of body.records) {
        // A listing that repeats an id (a looping cursor) must not make the run endless or count twice.
        if (typeof record.id !== 'string' || seen.has(record.id)) continue;
        seen.add(record.id);
        records.push({
          id: record.id,
          record_hash: typeof record.record_hash === 'string' ? record.record_hash : undefined,
        });
      }
      progress.tick(body.records.length);
      const nextCursor: unknown = body.next_cursor;
      if (typeof nextCursor === 'string' && nextCursor !== cursor && body.records.length > 0) cursor = nextCursor;
      else cursor = null;
    } while (cursor !== null);
  } catch (error) {
    progress.stop();
    return { records, error: `listing: ${(error as Error).message}` };
  }
  progress.done();
  return { records, error: undefined };
}
