import assert from 'node:assert/strict';
import type autocannon from 'autocannon';
import {
  epochToSealBeforeStop,
  formatAudit,
  formatComparison,
  formatScenario,
  parseAuditReport,
  positiveIntSetting,
  processCounts,
  scenarioProblems,
  summarizeLogLines,
  summarizeScenario,
} from '../../bench/load-report.js';

const histogram = (fields: Partial<autocannon.Histogram>) => ({ average: 0, p50: 0, p99: 0, max: 0, ...fields });

/** The fields of an autocannon result the summary reads. */
const result = (
  statusCodeStats: Record<string, { count?: number }>,
  extra: { errors?: number; timeouts?: number } = {},
) =>
  ({
    requests: histogram({ average: 1234.4 }),
    latency: histogram({ p50: 3, p99: 41, max: 120 }),
    throughput: histogram({ average: 2_500_000 }),
    errors: extra.errors ?? 0,
    timeouts: extra.timeouts ?? 0,
    statusCodeStats,
  }) as unknown as autocannon.Result;

describe('bench:load report helpers', () => {
  it('reads positive integer settings and refuses anything else', () => {
    assert.equal(positiveIntSetting('X', undefined, 10), 10);
    assert.equal(positiveIntSetting('X', ' ', 10), 10);
    assert.equal(positiveIntSetting('X', '20', 10), 20);
    for (const bad of ['0', '-1', '1.5', 'ten', '1e400']) {
      assert.throws(() => positiveIntSetting('BENCH_LOAD_SECONDS', bad, 10), /BENCH_LOAD_SECONDS must be a positive/);
    }
  });

  it('summarizes a clean scenario: every response a 200, no problems', () => {
    const s = summarizeScenario('tiles', result({ '200': { count: 5000 } }));
    assert.deepEqual(s.statuses, { '200': 5000 });
    assert.deepEqual(s.unexpected, {});
    assert.equal(s.requests, 5000);
    assert.equal(s.perSecond, 1234.4);
    assert.equal(s.p50Ms, 3);
    assert.equal(s.p99Ms, 41);
    assert.deepEqual(scenarioProblems(s), []);
    assert.match(
      formatScenario(s),
      /^tiles\s+1,234 req\/s {2}p50 +3 ms {2}p99 +41 ms .* 2\.5 MB\/s .*non-2xx none {2}errors 0/,
    );
  });

  it('names unexpected statuses, connection errors and an empty run as problems', () => {
    const s = summarizeScenario(
      'chat',
      result(
        { '200': { count: 90 }, '429': { count: 7 }, '503': { count: 3 }, '500': { count: 0 } },
        { errors: 2, timeouts: 1 },
      ),
    );
    assert.deepEqual(s.unexpected, { '429': 7, '503': 3 });
    assert.equal(s.requests, 100);
    assert.deepEqual(scenarioProblems(s), [
      'chat: 7 × HTTP 429',
      'chat: 3 × HTTP 503',
      'chat: 2 connection errors (1 timeouts)',
    ]);
    assert.match(formatScenario(s), /non-2xx \{"429":7,"503":3\}/);
    assert.deepEqual(scenarioProblems(summarizeScenario('proofs', result({}))), ['proofs: no responses']);
  });

  it('accepts the statuses a scenario declares', () => {
    const s = summarizeScenario('proofs', result({ '200': { count: 5 }, '404': { count: 1 } }), [200, 404]);
    assert.deepEqual(scenarioProblems(s), []);
  });

  it('shows sub-millisecond latencies as <1 (autocannon counts whole milliseconds)', () => {
    const s = summarizeScenario('proofs', {
      ...result({ '200': { count: 1 } }),
      latency: histogram({ p50: 0, p99: 2, max: 9 }),
    } as autocannon.Result);
    assert.match(formatScenario(s), /p50 +<1 ms/);
  });

  it('counts the service log lines at warn and above, with samples', () => {
    const lines = [
      JSON.stringify({ level: 30, msg: 'listening' }),
      JSON.stringify({ level: 40, msg: 'slow upstream' }),
      JSON.stringify({ level: 50, msg: 'writing proof records failed', err: { message: 'queue is full' } }),
      JSON.stringify({ level: 60, msg: 'boom' }),
      'not json',
      JSON.stringify({ level: 'warn', msg: 'odd' }),
    ];
    assert.deepEqual(summarizeLogLines(lines), {
      warn: 1,
      error: 2,
      samples: ['[warn] slow upstream', '[error] writing proof records failed: queue is full', '[error] boom'],
    });
    assert.equal(summarizeLogLines(lines, 1).samples.length, 1);
  });

  it('parses the store audit report the CLI prints', () => {
    const stdout = `${JSON.stringify({ ok: true, writers: 1, records_checked: 4984, seals_checked: 0, problems: [] }, null, 2)}\n`;
    const audit = parseAuditReport(stdout);
    assert.deepEqual(audit, { ok: true, writers: 1, records: 4984, seals: 0, problems: [] });
    assert.equal(formatAudit(audit), 'store audit: ok true, writers 1, records 4,984, seals 0, problems 0');
    const bad = parseAuditReport(
      JSON.stringify({ ok: false, writers: 1, records_checked: 2, seals_checked: 1, problems: [{ problem: 'x' }] }),
    );
    assert.equal(bad.ok, false);
    assert.equal(bad.problems.length, 1);
  });

  it('refuses an audit output that is not a report', () => {
    assert.throws(() => parseAuditReport(''), /printed no report/);
    assert.throws(() => parseAuditReport('{"ok": true}'), /no numeric writers/);
    assert.throws(
      () => parseAuditReport('{"ok":true,"writers":1,"records_checked":1,"seals_checked":0}'),
      /no problems list/,
    );
  });

  it('asks for a seal before stopping only when the run crossed into a new epoch', () => {
    const genesis = Date.UTC(2026, 0, 1);
    const hour = 3_600_000;
    const at = (epoch: number, minute: number) => genesis + epoch * hour + minute * 60_000;
    assert.equal(epochToSealBeforeStop(at(100, 10), at(100, 12), genesis), null);
    assert.equal(epochToSealBeforeStop(at(100, 59), at(101, 1), genesis), 100);
    assert.equal(epochToSealBeforeStop(at(100, 59.99), at(101, 0), genesis), 100);
  });

  it('reads BENCH_LOAD_WEB_CONCURRENCY as process counts, one run each', () => {
    assert.deepEqual(processCounts(undefined), [1]);
    assert.deepEqual(processCounts(''), [1]);
    assert.deepEqual(processCounts('1,2'), [1, 2]);
    assert.throws(() => processCounts('1,two'), /BENCH_LOAD_WEB_CONCURRENCY must be a positive integer/);
  });

  it('puts the runs side by side, each rate against the first run', () => {
    const one = summarizeScenario('tiles', result({ '200': { count: 10 } }));
    const two = { ...one, perSecond: one.perSecond * 1.5 };
    const table = formatComparison([
      { processes: 1, summaries: [one] },
      { processes: 2, summaries: [two] },
    ]);
    assert.match(table, /WEB_CONCURRENCY=1 req\/s \(p99\)\s+WEB_CONCURRENCY=2/);
    assert.match(table, /tiles\s+1,234 \(41 ms\)\s+1,852 \(41 ms\) ×1\.50/);
  });
});
