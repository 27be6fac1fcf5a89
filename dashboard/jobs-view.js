// @ts-check
/** Jobs: `/v1/compute/recent` with steps, status, costs and settlement; a job's detail from `/v1/compute/:id`. */
import { describeError, getJson } from './api.js';
import { badge, byId, credits, fill, h, num, shortHex, showError, table, td, time } from './dom.js';
import { showCellTelemetry } from './telemetry-view.js';

const RECENT_LIMIT = 50;

/** @param {string} status */
const statusBadge = (status) =>
  badge(status, status === 'complete' ? 'ok' : status === 'failed' ? 'bad' : status === 'skipped' ? 'muted' : 'info');

/** @param {{ navigate: (hash: string) => void }} ctx */
export function createJobsView(ctx) {
  const error = byId('jobs-error');
  const detail = byId('job-detail');
  /** @type {string | null} */
  let openJob = null;

  /** @param {any[]} jobs @param {string} [empty] what the table says when it lists no job */
  function renderList(jobs, empty = 'No job has been submitted yet (POST /v1/compute).') {
    const rows = jobs.map((j) =>
      h(
        'tr',
        { 'data-job-id': j.job_id, class: j.job_id === openJob ? 'selected' : null },
        td(time(j.created_at)),
        td(
          h(
            'button',
            { type: 'button', class: 'link', onclick: () => ctx.navigate(`#jobs/${j.job_id}`) },
            h('code', {}, j.job_id),
          ),
        ),
        td(statusBadge(j.status)),
        td(j.step_types.join(' → ')),
        td(h('code', {}, j.h3_cell)),
        td(num(j.epoch)),
        td(credits(j.total_credits)),
        td(shortHex(j.job_hash)),
      ),
    );
    fill(
      byId('jobs-table'),
      table({
        id: 'jobs-rows',
        caption: 'Recent jobs, newest first',
        columns: ['Created', 'Job', 'Status', 'Steps', 'Cell', 'Epoch', 'Credits', 'Job hash'],
        rows,
        empty,
      }),
    );
  }

  /** @param {any} job */
  function renderDetail(job) {
    const steps = (job.steps ?? []).map((/** @type {any} */ s) =>
      h(
        'tr',
        { 'data-step-id': s.id },
        td(h('code', {}, s.id)),
        td(s.type),
        td(
          statusBadge(s.status),
          s.error ? h('small', { class: 'note' }, ` ${s.error.code}: ${s.error.detail}`) : null,
        ),
        td(stepSummary(s)),
        td(`${num(s.latency_ms)} ms`),
        td(s.worker_pk === 'backbone' ? 'backbone' : shortHex(s.worker_pk)),
        td(credits(s.cost)),
        td(
          s.record_id
            ? h(
                'button',
                { type: 'button', class: 'link', onclick: () => ctx.navigate(`#proofs/${s.record_id}`) },
                'Check proof',
              )
            : '—',
        ),
      ),
    );
    const settlement = job.settlement;
    const telemetry = h('div', { class: 'settlement', id: 'job-telemetry' });
    const tiles = (job.steps ?? []).filter(
      (/** @type {any} */ s) =>
        typeof s.output?.image_base64 === 'string' && /^image\/(png|jpeg|webp)$/.test(s.output.content_type),
    );
    fill(
      detail,
      h(
        'div',
        { class: 'detail-head' },
        h('h3', {}, 'Job ', h('code', {}, job.job_id)),
        h('button', { type: 'button', class: 'secondary', onclick: () => ctx.navigate('#jobs') }, 'Close'),
      ),
      h(
        'dl',
        { class: 'facts' },
        fact('Status', statusBadge(job.status)),
        fact('Cell', h('code', {}, job.h3_cell ?? '—')),
        fact('Epoch', num(job.epoch)),
        fact('Worker', job.worker_pk === 'backbone' ? 'backbone' : shortHex(job.worker_pk)),
        job.created_at ? fact('Created', time(job.created_at)) : null,
      ),
      job.error ? h('p', { class: 'error' }, `${job.error.code}: ${job.error.detail}`) : null,
      table({
        id: 'job-steps',
        caption: 'Steps',
        columns: ['Step', 'Type', 'Status', 'Output', 'Latency', 'Worker', 'Credits', 'Proof'],
        rows: steps,
        empty: 'This job has no step results (yet).',
      }),
      settlement
        ? h(
            'div',
            { class: 'settlement' },
            h('h4', {}, 'Settlement'),
            h(
              'dl',
              { class: 'facts' },
              fact('Total', `${credits(settlement.total_credits)} credits`),
              fact('Proof', `${credits(settlement.proof_credits)} credits`),
              ...Object.entries(settlement.breakdown ?? {}).map(([step, cost]) =>
                fact(`Step ${step}`, `${credits(/** @type {number} */ (cost))} credits`),
              ),
              fact(
                'Ledger transaction',
                settlement.stellar_tx ? shortHex(settlement.stellar_tx) : 'not settled on the external ledger yet',
              ),
            ),
          )
        : null,
      job.proof
        ? h(
            'div',
            { class: 'settlement' },
            h('h4', {}, 'Proof'),
            h(
              'dl',
              { class: 'facts' },
              fact('Job hash', shortHex(job.proof.job_hash)),
              fact(
                'Record',
                h(
                  'button',
                  { type: 'button', class: 'link', onclick: () => ctx.navigate(`#proofs/${job.proof.record_id}`) },
                  job.proof.record_id,
                ),
              ),
            ),
          )
        : null,
      ...tiles.map((/** @type {any} */ s) =>
        h(
          'figure',
          { class: 'tile-figure' },
          h('img', {
            src: `data:${s.output.content_type};base64,${s.output.image_base64}`,
            alt: `Tile rendered by step ${s.id}`,
            width: 256,
            height: 256,
          }),
          h('figcaption', {}, `Step ${s.id}: ${s.output.style} tile z${s.output.zoom}/${s.output.x}/${s.output.y}`),
        ),
      ),
      telemetry,
    );
    void showCellTelemetry(telemetry, job);
  }

  /** @param {string} jobId */
  async function loadDetail(jobId) {
    detail.hidden = false;
    fill(detail, h('p', {}, `Loading job ${jobId}…`));
    const answer = await getJson(`/v1/compute/${encodeURIComponent(jobId)}`);
    if (openJob !== jobId) return;
    if (answer.ok) renderDetail(answer.body);
    else
      fill(detail, h('p', { class: 'error', role: 'alert' }, `Could not read job ${jobId}: ${describeError(answer)}`));
  }

  return {
    async refresh() {
      const answer = await getJson(`/v1/compute/recent?limit=${RECENT_LIMIT}`);
      showError(error, answer.ok ? '' : `Could not read the jobs: ${describeError(answer)}`);
      if (!answer.ok) return;
      // Without the operator token the gateway shows counts only: job ids are capabilities. The table says so
      // itself, rather than "no job yet" under a line that counts them.
      if (!Array.isArray(answer.body.jobs)) {
        const count = /** @type {number} */ (answer.body.count ?? 0);
        const counts = Object.entries(answer.body.by_status ?? {})
          .map(([status, n]) => `${num(/** @type {number} */ (n))} ${status}`)
          .join(', ');
        renderList(
          [],
          count === 0
            ? 'No job has been submitted yet (POST /v1/compute).'
            : `${num(count)} recent job${count === 1 ? '' : 's'} (${counts}): enter the operator token ` +
                "(the gateway's OPERATOR_TOKEN) in the header to list them; job ids are shown to the operator only.",
        );
        return;
      }
      renderList(answer.body.jobs);
    },
    /** @param {string | null} jobId */
    open(jobId) {
      if (jobId === openJob) return;
      openJob = jobId;
      if (jobId) void loadDetail(jobId);
      else {
        detail.hidden = true;
        detail.replaceChildren();
      }
    },
  };
}

/** @param {string} term @param {Node | string} value */
function fact(term, value) {
  return h('div', {}, h('dt', {}, term), h('dd', {}, value));
}

/** A step's output in one line: what it answered, without the customer's text. @param {any} step */
function stepSummary(step) {
  const o = step.output ?? {};
  if (step.type === 'inference' && o.model)
    return `${o.provider} · ${o.model} · ${num(o.tokens_in)} → ${num(o.tokens_out)} tokens`;
  if (step.type === 'tile_render' && o.style) return `${o.style} z${o.zoom}/${o.x}/${o.y} · ${num(o.size)} bytes`;
  if (step.type === 'image_process' && o.operation) return `${o.operation}${o.scene_id ? ` · ${o.scene_id}` : ''}`;
  if (step.type === 'sensor_fusion' && o.quantity)
    return `${o.quantity} ${num(o.value, 3)} ${o.unit} · ${num(o.device_count)} devices (${num(o.rejected?.length ?? 0)} rejected)`;
  return '—';
}
