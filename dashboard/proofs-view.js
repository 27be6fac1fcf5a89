// @ts-check
/**
 * Epochs & proofs: the records of recent epochs (`/store/query`), each (writer, epoch) with its seal, and the
 * proof checker, which verifies `/store/proof/:id` in this page (proof-verify.js) and shows every step.
 */
import { describeError, getJson } from './api.js';
import { badge, byId, fill, h, num, shortHex, showError, table, td, time } from './dom.js';
import { verifyBundle } from './proof-verify.js';

const RECORDS_LIMIT = 200;
/** Seals looked up per refresh: one proof request per (writer, epoch) shown. */
const MAX_EPOCH_ROWS = 12;

/** @param {{ navigate: (hash: string) => void, currentEpoch: () => number | null }} ctx */
export function createProofsView(ctx) {
  const error = byId('proofs-error');
  const form = /** @type {HTMLFormElement} */ (byId('proof-form'));
  const input = /** @type {HTMLInputElement} */ (byId('proof-id'));
  const result = byId('proof-result');
  const collection = /** @type {HTMLSelectElement} */ (byId('records-collection'));
  const from = /** @type {HTMLInputElement} */ (byId('records-from'));
  const to = /** @type {HTMLInputElement} */ (byId('records-to'));
  let checking = 0;

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const id = input.value.trim();
    if (id) ctx.navigate(`#proofs/${id}`);
  });
  byId('records-filters').addEventListener('submit', (event) => {
    event.preventDefault();
    void refresh();
  });

  /** @param {string} id */
  async function check(id) {
    const run = ++checking;
    input.value = id;
    fill(
      result,
      h('p', { class: 'verdict verdict-running', 'data-verdict': 'running' }, `Fetching and verifying ${id}…`),
    );
    const answer = await getJson(`/store/proof/${encodeURIComponent(id)}`);
    if (run !== checking) return;
    if (!answer.ok) {
      const reason = answer.status === 404 ? `there is no record with id ${JSON.stringify(id)}` : describeError(answer);
      fill(result, verdictBanner('failed', `Failed: ${reason}.`));
      return;
    }
    if (!globalThis.crypto?.subtle) {
      fill(
        result,
        verdictBanner('failed', 'Cannot verify here: WebCrypto needs a secure context (HTTPS or localhost).'),
      );
      return;
    }
    let verdict;
    try {
      verdict = await verifyBundle(answer.body, id);
    } catch (e) {
      const unsupported = e instanceof Error && e.name === 'NotSupportedError';
      fill(
        result,
        verdictBanner(
          'failed',
          unsupported
            ? 'Cannot verify here: this browser has no WebCrypto Ed25519.'
            : `Verification stopped: ${String(e)}`,
        ),
      );
      return;
    }
    if (run !== checking) return;
    renderVerdict(id, answer.body, verdict);
  }

  /**
   * @param {string} id @param {any} bundle
   * @param {import('./proof-verify.js').Verdict} verdict
   */
  function renderVerdict(id, bundle, verdict) {
    const seal = bundle.seal;
    const record = bundle.record;
    const headline =
      verdict.verdict === 'verified'
        ? `Verified: record ${id} is in the Merkle tree of epoch ${seal.epoch}, sealed and signed by its writer.`
        : verdict.verdict === 'pending'
          ? `Pending: epoch ${record?.address?.epoch} is not sealed yet, so the record has no inclusion proof. Its own hash and signature check out.`
          : `Failed: ${verdict.problems.join('; ')}.`;
    const path = verdict.path;
    fill(
      result,
      verdictBanner(verdict.verdict, headline),
      h(
        'ul',
        { class: 'checks', 'aria-label': 'Checks' },
        ...verdict.checks.map((c) =>
          h(
            'li',
            { class: c.ok === true ? 'pass' : c.ok === false ? 'fail' : 'wait', 'data-check': c.name },
            h('span', { class: 'mark', 'aria-hidden': 'true' }, c.ok === true ? '✓' : c.ok === false ? '✗' : '…'),
            h('strong', {}, c.name),
            h(
              'span',
              { class: 'visually-hidden' },
              c.ok === true ? ' passed: ' : c.ok === false ? ' failed: ' : ' not yet: ',
            ),
            ' ',
            h('span', { class: 'check-detail' }, c.detail),
          ),
        ),
      ),
      path
        ? h(
            'div',
            { class: 'merkle' },
            h('h4', {}, `Path to the root (leaf ${path.leaf_index} of ${path.tree_size})`),
            h(
              'ol',
              { class: 'merkle-path', id: 'merkle-path' },
              h(
                'li',
                { 'data-kind': 'leaf' },
                h('span', { class: 'step-label' }, 'leaf = SHA-256(0x00 ‖ record_hash)'),
                h('code', {}, path.leaf),
              ),
              ...path.steps.map((s, i) =>
                h(
                  'li',
                  { 'data-kind': 'step', 'data-side': s.side },
                  h('span', { class: 'step-label' }, `step ${i + 1}, height ${s.level}: sibling on the ${s.side}`),
                  h('code', { class: 'sibling' }, s.sibling),
                  h('span', { class: 'arrow', 'aria-hidden': 'true' }, '→ '),
                  h('code', {}, s.result),
                ),
              ),
              h(
                'li',
                { 'data-kind': 'root', class: path.root === path.sealed_root ? 'pass' : 'fail' },
                h(
                  'span',
                  { class: 'step-label' },
                  path.root === path.sealed_root ? 'root = the sealed merkle_root' : 'root ≠ the sealed merkle_root',
                ),
                h('code', {}, path.root),
                path.root === path.sealed_root ? null : h('code', {}, `sealed: ${path.sealed_root}`),
              ),
            ),
          )
        : null,
      seal
        ? h(
            'dl',
            { class: 'facts' },
            h('div', {}, h('dt', {}, 'Epoch'), h('dd', {}, num(seal.epoch))),
            h('div', {}, h('dt', {}, 'Records in epoch'), h('dd', {}, num(seal.record_count))),
            h('div', {}, h('dt', {}, 'Merkle root'), h('dd', {}, shortHex(seal.merkle_root))),
            h('div', {}, h('dt', {}, 'Previous seal'), h('dd', {}, shortHex(seal.prev_epoch_hash))),
            h('div', {}, h('dt', {}, 'Sealed at'), h('dd', {}, time(seal.sealed_at))),
            h('div', {}, h('dt', {}, 'Sealer'), h('dd', {}, shortHex(seal.sealer_pk))),
            h(
              'div',
              {},
              h('dt', {}, 'Anchor'),
              h('dd', {}, bundle.anchor ? shortHex(bundle.anchor.tx_hash) : 'not anchored yet'),
            ),
          )
        : null,
      h('p', { class: 'note' }, `The gateway's own claim (not used here): verified = ${String(bundle.verified)}.`),
    );
  }

  /** @param {any[]} records */
  async function renderEpochs(records) {
    /** @type {Map<string, any[]>} */
    const groups = new Map();
    for (const r of records) {
      const key = `${r.address.epoch}/${r.address.pk}`;
      groups.set(key, [...(groups.get(key) ?? []), r]);
    }
    const newest = [...groups.values()]
      .sort((a, b) => b[0].address.epoch - a[0].address.epoch)
      .slice(0, MAX_EPOCH_ROWS);
    const proofs = await Promise.all(newest.map((g) => getJson(`/store/proof/${encodeURIComponent(g[0].id)}`)));
    const rows = newest.map((g, i) => {
      const answer = proofs[i];
      const seal = answer?.ok ? answer.body.seal : null;
      return h(
        'tr',
        { 'data-epoch': g[0].address.epoch },
        td(num(g[0].address.epoch)),
        td(shortHex(g[0].address.pk)),
        td(num(g.length)),
        td(seal ? badge('sealed', 'ok') : answer?.ok ? badge('open', 'info') : badge('unknown', 'muted')),
        td(seal ? num(seal.record_count) : '—'),
        td(seal ? shortHex(seal.merkle_root) : '—'),
        td(seal ? shortHex(seal.prev_epoch_hash) : '—'),
        td(seal ? time(seal.sealed_at) : '—'),
      );
    });
    fill(
      byId('epochs-table'),
      table({
        id: 'epochs-rows',
        caption: 'Epochs of the records below, per writer, newest first',
        columns: [
          'Epoch',
          'Writer',
          'Records shown',
          'Seal',
          'Records sealed',
          'Merkle root',
          'Previous seal',
          'Sealed at',
        ],
        rows,
        empty: 'No records in these epochs.',
      }),
    );
  }

  /** @param {any[]} records */
  function renderRecords(records) {
    const rows = [...records].reverse().map((r) =>
      h(
        'tr',
        { 'data-record-id': r.id },
        td(
          h(
            'button',
            {
              type: 'button',
              class: 'link',
              title: 'Verify this record',
              onclick: () => ctx.navigate(`#proofs/${r.id}`),
            },
            h('code', {}, r.id),
          ),
        ),
        td(r.collection_type),
        td(h('code', {}, r.address.h3_cell)),
        td(num(r.address.epoch)),
        td(num(r.seq)),
        td(shortHex(r.address.pk)),
        td(shortHex(r.record_hash)),
        td(time(r.written_at)),
      ),
    );
    fill(
      byId('records-table'),
      table({
        id: 'records-rows',
        caption: `Records, newest first (at most ${RECORDS_LIMIT})`,
        columns: ['Record', 'Collection', 'Cell', 'Epoch', 'Seq', 'Writer', 'Record hash', 'Written'],
        rows,
        empty: 'No records match.',
      }),
    );
  }

  async function refresh() {
    const epoch = ctx.currentEpoch();
    if (!from.value && epoch !== null) from.value = String(Math.max(0, epoch - 2));
    const params = new URLSearchParams({ limit: String(RECORDS_LIMIT) });
    if (collection.value) params.set('collection', collection.value);
    if (from.value) params.set('epoch_start', from.value);
    if (to.value) params.set('epoch_end', to.value);
    const answer = await getJson(`/store/query?${params}`);
    showError(error, answer.ok ? '' : `Could not read the records: ${describeError(answer)}`);
    if (!answer.ok) return;
    renderRecords(answer.body.records);
    await renderEpochs(answer.body.records);
  }

  return {
    refresh,
    /** @param {string | null} id */
    check(id) {
      if (id) void check(id);
    },
  };
}

/** @param {string} verdict @param {string} text */
function verdictBanner(verdict, text) {
  return h(
    'p',
    { class: `verdict verdict-${verdict}`, id: 'proof-verdict', 'data-verdict': verdict, role: 'status' },
    text,
  );
}
