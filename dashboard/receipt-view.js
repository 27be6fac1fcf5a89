// @ts-check
/* global FileReader -- a browser global (the project ESLint config knows Node globals only) */
/**
 * The receipt checker (Epochs & proofs tab): a job receipt (`geofabric receipt get`, `GET /v1/compute/:id/receipt`)
 * dropped on the box, chosen as a file or pasted, is verified in this page by receipt-verify.js — nothing is
 * sent anywhere — and each check is listed with its outcome (docs/protocol.md §15). Only what verified is shown
 * as verified: the checks after the first that failed are listed as not counted, without their details.
 */
import { byId, fill, h } from './dom.js';
import { verifyReceipt } from './receipt-verify.js';

const HEX64 = /^[0-9a-f]{64}$/;

export function createReceiptView() {
  const form = /** @type {HTMLFormElement} */ (byId('receipt-form'));
  const text = /** @type {HTMLTextAreaElement} */ (byId('receipt-text'));
  const file = /** @type {HTMLInputElement} */ (byId('receipt-file'));
  const sealer = /** @type {HTMLInputElement} */ (byId('receipt-sealer'));
  const allowPending = /** @type {HTMLInputElement} */ (byId('receipt-allow-pending'));
  const result = byId('receipt-result');
  let run = 0;

  async function check() {
    const mine = ++run;
    let receipt;
    try {
      receipt = JSON.parse(text.value);
    } catch (error) {
      fill(result, banner('failed', `Not JSON: ${error instanceof Error ? error.message : String(error)}`));
      return;
    }
    const pk = sealer.value.trim();
    if (pk !== '' && !HEX64.test(pk)) {
      fill(result, banner('failed', 'The node key is 64 lowercase hex (or empty).'));
      return;
    }
    fill(result, banner('running', 'Verifying in this page…'));
    const verdict = await verifyReceipt(receipt, {
      ...(pk === '' ? {} : { sealerPk: pk }),
      allowPending: allowPending.checked,
    });
    if (mine !== run) return; // a newer receipt replaced this one
    const r = /** @type {Record<string, any>} */ (receipt);
    const headline = verdict.ok
      ? `Valid: job ${r.job_id} (${r.status}) — every check passed.`
      : `Invalid: the ${verdict.failedCheck} check failed.`;
    fill(
      result,
      banner(verdict.ok ? 'verified' : 'failed', headline),
      h(
        'ul',
        { class: 'checks', id: 'receipt-checks', 'aria-label': 'Receipt checks' },
        ...receiptRows(verdict).map((row) =>
          h(
            'li',
            { class: row.state, 'data-check': row.name },
            h('span', { class: 'mark', 'aria-hidden': 'true' }, MARKS[row.state]),
            h('strong', {}, row.name),
            h('span', { class: 'visually-hidden' }, ` ${row.state}: `),
            ' ',
            h('span', { class: 'check-detail' }, row.detail),
          ),
        ),
      ),
    );
  }

  /** @param {Blob} blob */
  function load(blob) {
    const reader = new FileReader();
    reader.onload = () => {
      text.value = String(reader.result);
      void check();
    };
    reader.readAsText(blob);
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void check();
  });
  file.addEventListener('change', () => {
    const chosen = file.files?.[0];
    if (chosen) load(chosen);
  });
  text.addEventListener('dragover', (event) => {
    event.preventDefault();
    text.classList.add('drop-target');
  });
  text.addEventListener('dragleave', () => text.classList.remove('drop-target'));
  text.addEventListener('drop', (event) => {
    event.preventDefault();
    text.classList.remove('drop-target');
    const dropped = event.dataTransfer?.files?.[0];
    if (dropped) load(dropped);
    else {
      text.value = event.dataTransfer?.getData('text/plain') ?? '';
      void check();
    }
  });
  // A paste is checked at once: the pasted text is the whole receipt.
  text.addEventListener('paste', () => setTimeout(() => void check(), 0));
  return { check };
}

const MARKS = { pass: '✓', fail: '✗', unverified: '–' };

/**
 * The rows the checker lists: each check up to the first that failed with its outcome and detail; every check
 * after it as `unverified`, its detail withheld. A check after a failure may still pass (the answer matches a job
 * record whose signature failed), and its detail would then show the receipt's values as if proven; verification
 * reports the first failure only (docs/protocol.md §15.2).
 * @param {{ checks: { name: string, ok: boolean, detail: string }[] }} verdict
 * @returns {{ name: string, state: 'pass' | 'fail' | 'unverified', detail: string }[]}
 */
export function receiptRows(verdict) {
  const failed = verdict.checks.findIndex((c) => !c.ok);
  return verdict.checks.map((c, i) => {
    if (failed === -1 || i < failed) return { name: c.name, state: 'pass', detail: c.detail };
    if (i === failed) return { name: c.name, state: 'fail', detail: c.detail };
    const first = verdict.checks[failed]?.name ?? '';
    return { name: c.name, state: 'unverified', detail: `not counted: the ${first} check failed` };
  });
}

/** @param {'verified' | 'failed' | 'running'} kind @param {string} text */
const banner = (kind, text) => h('p', { class: `verdict verdict-${kind}`, role: 'status' }, text);
