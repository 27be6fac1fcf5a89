/**
 * The governance server's client of the perception service's compliance reports (docs/protocol.md §4.2
 * `GET /compliance/:agent_pk?from=&to=`), bounded by a timeout and a body size. It never throws: an audit
 * bundle records a report it could not get as `report: null` plus `report_error`, and the rest of the
 * evidence (blocks, seals, certificates) stands on its own.
 */
import { readBoundedBody } from '../../activities/bounded-body.js';
import { Deadline } from '../../activities/deadline.js';

/** A report is a few kilobytes per hundred operations; a 100,000-block agent's stays well under this. */
export const MAX_REPORT_BYTES = 8 << 20;

export type ReportFetch = { ok: true; report: unknown } | { ok: false; error: string };

export interface ComplianceClient {
  /** The compliance report of `agentPk` for [from, to] (ISO 8601). */
  report(agentPk: string, period: { from: string; to: string }, signal?: AbortSignal): Promise<ReportFetch>;
}

export interface ComplianceClientOptions {
  /** COMPLIANCE_URL: the perception service's base address (no trailing slash needed). */
  baseUrl: string;
  timeoutMs: number;
  userAgent?: string;
}

class TooLarge extends Error {}

export function createComplianceClient(options: ComplianceClientOptions): ComplianceClient {
  const base = options.baseUrl.replace(/\/+$/, '');
  return {
    async report(agentPk, period, signal) {
      const url = `${base}/compliance/${encodeURIComponent(agentPk)}?${new URLSearchParams(period).toString()}`;
      const deadline = new Deadline(options.timeoutMs, signal);
      try {
        const res = await fetch(url, {
          headers: {
            accept: 'application/json',
            ...(options.userAgent ? { 'user-agent': options.userAgent } : {}),
          },
          signal: deadline.signal,
          redirect: 'error',
        });
        const text = (
          await readBoundedBody(
            res,
            MAX_REPORT_BYTES,
            () => new TooLarge(`more than ${MAX_REPORT_BYTES} bytes`),
            deadline.signal,
          )
        ).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text) as unknown;
        } catch {
          return {
            ok: false,
            error: `the compliance service answered HTTP ${res.status} with a body that is not JSON`,
          };
        }
        if (!res.ok) {
          const body = (typeof json === 'object' && json !== null ? json : {}) as Record<string, unknown>;
          const code = typeof body.error === 'string' ? body.error.slice(0, 100) : 'error';
          const detail = typeof body.detail === 'string' ? `: ${body.detail.slice(0, 200)}` : '';
          return { ok: false, error: `the compliance service answered HTTP ${res.status} ${code}${detail}` };
        }
        if (typeof json !== 'object' || json === null || Array.isArray(json)) {
          return { ok: false, error: 'the compliance service answered something that is not a report object' };
        }
        return { ok: true, report: json };
      } catch (error) {
        if (error instanceof TooLarge) return { ok: false, error: `the compliance report is ${error.message}` };
        const kind = (error as { name?: unknown }).name;
        if (deadline.expired || kind === 'TimeoutError') {
          return { ok: false, error: `the compliance service did not answer within ${options.timeoutMs} ms` };
        }
        if (signal?.aborted) return { ok: false, error: 'cancelled while waiting for the compliance service' };
        const cause = (error as { cause?: { code?: unknown } }).cause?.code;
        return {
          ok: false,
          error: `the compliance service at ${base} is unreachable${typeof cause === 'string' ? ` (${cause})` : ''}`,
        };
      } finally {
        deadline.clear();
      }
    },
  };
}
