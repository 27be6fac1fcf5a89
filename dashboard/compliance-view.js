// @ts-check
/**
 * Compliance: an agent's report (docs/protocol.md §2.8) from the perception service, read through this gateway's proxy
 * (`/dashboard/api/compliance[/:agent_pk]`): score, tier, chain status, operations by tool, violations.
 */
import { describeError, getJson } from './api.js';
import { badge, byId, card, fill, h, num, plural, shortHex, table, td, time } from './dom.js';

/** @param {{ config: any, navigate: (hash: string) => void }} ctx */
export function createComplianceView(ctx) {
  const form = /** @type {HTMLFormElement} */ (byId('compliance-form'));
  const pk = /** @type {HTMLInputElement} */ (byId('compliance-pk'));
  const from = /** @type {HTMLInputElement} */ (byId('compliance-from'));
  const to = /** @type {HTMLInputElement} */ (byId('compliance-to'));
  const result = byId('compliance-result');
  byId('perception-url').textContent = ctx.config.perception_url;
  let run = 0;

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (!form.reportValidity()) return;
    const agent = pk.value.trim();
    // The hash names the report (a link to it can be shared); routing loads it.
    ctx.navigate(agent ? `#compliance/${agent}` : '#compliance/self');
  });

  /** @param {string | null} agent */
  async function load(agent) {
    const mine = ++run;
    pk.value = agent ?? '';
    const params = new URLSearchParams();
    if (from.value) params.set('from', `${from.value}T00:00:00Z`);
    if (to.value) params.set('to', `${to.value}T23:59:59Z`);
    const query = params.size ? `?${params}` : '';
    fill(
      result,
      h('p', {}, `Asking the perception service for ${agent ? `agent ${agent.slice(0, 8)}…` : 'its own agent'}…`),
    );
    const answer = await getJson(`${ctx.config.compliance_path}${agent ? `/${agent}` : ''}${query}`, {
      timeoutMs: 15_000,
    });
    if (mine !== run) return;
    if (!answer.ok) {
      fill(
        result,
        h('p', { class: 'error', role: 'alert', id: 'compliance-error' }, `No report: ${describeError(answer)}`),
      );
      return;
    }
    render(answer.body);
  }

  /** @param {any} r */
  function render(r) {
    const chain = r.chain_verification ?? {};
    const ops = Object.entries(r.operations_by_tool ?? {}).sort(
      (a, b) => /** @type {number} */ (b[1]) - /** @type {number} */ (a[1]),
    );
    const violations = Array.isArray(r.violations) ? r.violations : [];
    fill(
      result,
      h('h3', {}, 'Report for ', h('code', { id: 'compliance-agent' }, r.agent_handle ?? r.agent_pk)),
      h(
        'p',
        { class: 'note' },
        'Period ',
        time(r.reporting_period?.from),
        ' to ',
        time(r.reporting_period?.to),
        ' · generated ',
        time(r.generated_at),
      ),
      h(
        'div',
        { class: 'cards' },
        h(
          'div',
          { class: 'card', id: 'compliance-score' },
          h('p', { class: 'card-label' }, 'Trust score'),
          h('p', { class: 'card-value' }, `${num(r.trust_score, 2)} / 100`),
          h('meter', { min: 0, max: 100, value: r.trust_score ?? 0, 'aria-label': 'Trust score' }),
        ),
        card('Tier', String(r.current_tier ?? '—')),
        h(
          'div',
          { class: 'card', id: 'compliance-chain' },
          h('p', { class: 'card-label' }, 'Audit chain'),
          h('p', { class: 'card-value' }, chain.is_valid ? badge('valid', 'ok') : badge('invalid', 'bad')),
          h('p', { class: 'card-note' }, `${num(chain.block_count)} blocks`),
        ),
        card('Operations', num(r.total_operations), plural((r.jurisdiction_cells ?? []).length, 'cell')),
        card(
          'Delegation',
          `depth ${num(r.delegation_chain_depth)}`,
          `human approvals ${num(r.human_approvals_received)} / ${num(r.human_approvals_required)}`,
        ),
        card(
          'Violations',
          num(violations.length),
          violations.some((/** @type {any} */ v) => v.severity === 'critical') ? 'critical ones included' : '',
        ),
      ),
      h(
        'dl',
        { class: 'facts' },
        h('div', {}, h('dt', {}, 'Agent'), h('dd', {}, shortHex(r.agent_pk))),
        h('div', {}, h('dt', {}, 'Principal'), h('dd', {}, shortHex(r.principal_pk))),
        h('div', {}, h('dt', {}, 'First block'), h('dd', {}, time(chain.first_block_at))),
        h('div', {}, h('dt', {}, 'Last block'), h('dd', {}, time(chain.last_block_at))),
        h('div', {}, h('dt', {}, 'Delegation certificate'), h('dd', {}, shortHex(chain.delegation_cert_hash))),
      ),
      (chain.issues ?? []).length > 0
        ? h(
            'div',
            { class: 'error', role: 'alert' },
            h('p', {}, 'Chain issues:'),
            h('ul', {}, ...chain.issues.map((/** @type {string} */ i) => h('li', {}, i))),
          )
        : null,
      table({
        id: 'compliance-ops',
        caption: 'Operations by tool',
        columns: ['Tool', 'Operations'],
        rows: ops.map(([tool, n]) =>
          h('tr', { 'data-tool': tool }, td(h('code', {}, tool)), td(num(/** @type {number} */ (n)))),
        ),
        empty: 'No operations in this period.',
      }),
      table({
        id: 'compliance-violations',
        caption: 'Violations',
        columns: ['Type', 'Severity', 'Details'],
        rows: violations.map((/** @type {any} */ v) =>
          h(
            'tr',
            {},
            td(h('code', {}, v.type ?? v.violation_type ?? '—')),
            td(badge(String(v.severity ?? '—'), v.severity === 'critical' ? 'bad' : 'warn')),
            td(violationDetails(v)),
          ),
        ),
        empty: 'No violations in this period.',
      }),
      table({
        id: 'compliance-epochs',
        caption: 'Epochs',
        columns: ['Epoch', 'Blocks', 'Merkle root', 'Tier at close'],
        rows: (r.epochs ?? []).map((/** @type {any} */ e) =>
          h(
            'tr',
            {},
            td(num(e.epoch_index ?? e.index)),
            td(num(e.block_count)),
            td(shortHex(e.merkle_root)),
            td(String(e.tier_at_close ?? '—')),
          ),
        ),
        empty: 'No epoch rolled in this period.',
      }),
    );
  }

  return {
    /** @param {string | null} agent `self` for the perception server's own agent */
    open(agent) {
      if (agent) void load(agent === 'self' ? null : agent);
    },
  };
}

/** Every field but type and severity, as text. @param {Record<string, unknown>} v */
function violationDetails(v) {
  const rest = Object.entries(v).filter(([k]) => k !== 'type' && k !== 'severity');
  return rest.length
    ? rest.map(([k, value]) => `${k}: ${typeof value === 'string' ? value : JSON.stringify(value)}`).join(' · ')
    : '—';
}
