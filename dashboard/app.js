// @ts-check
/* global document, location, window -- browser globals (the project ESLint config knows Node globals only) */
/**
 * The dashboard's entry: reads `/dashboard/config.json`, routes by the URL hash (`#swarm`, `#jobs/<id>`,
 * `#proofs/<record id>`, `#compliance/<agent pk>` …), and refreshes the visible view every `poll_ms` while
 * "Live updates" is on and the tab is visible. Everything it shows comes from this origin.
 */
import { describeError, getJson, operatorToken, setOperatorToken } from './api.js';
import { byId, num } from './dom.js';
import { createAuditView } from './audit-view.js';
import { createComplianceView } from './compliance-view.js';
import { createJobsView } from './jobs-view.js';
import { createProofsView } from './proofs-view.js';
import { createReceiptView } from './receipt-view.js';
import { createSwarmView } from './swarm-view.js';
import { createTilesView } from './tiles-view.js';

const TABS = ['swarm', 'audit', 'jobs', 'proofs', 'tiles', 'compliance'];
const FALLBACK_CONFIG = {
  version: '',
  perception_url: 'unknown',
  compliance_path: '/dashboard/api/compliance',
  poll_ms: 5000,
  tiles: { styles: ['osm-standard'], style: 'osm-standard', max_zoom: 19 },
};

async function main() {
  const configAnswer = await getJson('/dashboard/config.json');
  const config = configAnswer.ok ? configAnswer.body : FALLBACK_CONFIG;
  byId('version').textContent = config.version ? `v${config.version}` : '';
  /** @type {number | null} */
  let currentEpoch = null;

  const navigate = (/** @type {string} */ hash) => {
    if (location.hash === hash) route();
    else location.hash = hash;
  };
  const ctx = { config, navigate, currentEpoch: () => currentEpoch };
  /** @type {Record<string, { refresh?: () => Promise<void>, shown?: () => void }>} */
  const views = {
    swarm: createSwarmView(ctx),
    audit: createAuditView(ctx),
    jobs: createJobsView(ctx),
    proofs: createProofsView(ctx),
    tiles: createTilesView(),
    compliance: {},
  };
  const compliance = createComplianceView(ctx);
  createReceiptView();
  const jobs = /** @type {ReturnType<typeof createJobsView>} */ (views.jobs);
  const proofs = /** @type {ReturnType<typeof createProofsView>} */ (views.proofs);
  let active = '';
  let inFlight = false;

  async function refreshSummary() {
    const status = await getJson('/svc/status');
    const summary = byId('summary');
    if (!status.ok) {
      summary.textContent = `Gateway unreachable or failing: ${describeError(status)}`;
      summary.classList.add('summary-error');
      return;
    }
    const s = status.body;
    currentEpoch = s.epoch;
    summary.classList.remove('summary-error');
    summary.textContent =
      `Epoch ${num(s.epoch)} · ${num(s.workers.online)} workers online · ` +
      `backbone ${s.backbone?.configured ? (s.backbone.reachable === false ? 'unreachable' : 'on') : 'off'} · ` +
      `updated ${new Date().toLocaleTimeString('en-GB')}`;
  }

  /** Refreshes the header and the visible view; a slow gateway never stacks requests. */
  async function tick() {
    if (inFlight) return;
    inFlight = true;
    try {
      await refreshSummary();
      await views[active]?.refresh?.();
    } catch (error) {
      // A view must not stop the polling; its own error line shows what it could not read.
      byId('summary').textContent = `Dashboard error: ${error instanceof Error ? error.message : String(error)}`;
    } finally {
      inFlight = false;
    }
  }

  function route() {
    const [tab = 'swarm', ...rest] = location.hash.replace(/^#/, '').split('/');
    const name = TABS.includes(tab) ? tab : 'swarm';
    const arg = rest.length ? safeDecode(rest.join('/')) : null;
    for (const t of TABS) {
      const selected = t === name;
      byId(t).hidden = !selected;
      const tabEl = byId(`tab-${t}`);
      tabEl.setAttribute('aria-selected', String(selected));
      tabEl.setAttribute('tabindex', selected ? '0' : '-1');
    }
    if (name === 'jobs') jobs.open(arg);
    if (name === 'proofs') proofs.check(arg);
    if (name === 'compliance') compliance.open(arg);
    const changed = active !== name;
    active = name;
    if (changed) {
      views[name]?.shown?.();
      void tick();
    }
  }

  // Arrow keys move between tabs (WAI-ARIA tabs pattern); Enter follows the link.
  byId('tablist').addEventListener('keydown', (event) => {
    const i = TABS.indexOf(active);
    const next =
      event.key === 'ArrowRight'
        ? TABS[(i + 1) % TABS.length]
        : event.key === 'ArrowLeft'
          ? TABS[(i + TABS.length - 1) % TABS.length]
          : null;
    if (!next) return;
    event.preventDefault();
    navigate(`#${next}`);
    byId(`tab-${next}`).focus();
  });
  window.addEventListener('hashchange', route);
  // The operator token (OPERATOR_TOKEN) lists every job and inference; kept for this tab only.
  const tokenInput = /** @type {HTMLInputElement} */ (byId('operator-token'));
  tokenInput.placeholder = operatorToken() ? 'set (empty to forget)' : 'not set';
  byId('operator-form').addEventListener('submit', (event) => {
    event.preventDefault();
    setOperatorToken(tokenInput.value.trim());
    tokenInput.value = '';
    tokenInput.placeholder = operatorToken() ? 'set (empty to forget)' : 'not set';
    void tick();
  });
  const live = /** @type {HTMLInputElement} */ (byId('live'));
  setInterval(
    () => {
      if (live.checked && !document.hidden) void tick();
    },
    Math.max(1000, Number(config.poll_ms) || 5000),
  );
  route();
}

/** @param {string} text */
function safeDecode(text) {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

main().catch((error) => {
  const summary = document.getElementById('summary');
  if (summary)
    summary.textContent = `The dashboard could not start: ${error instanceof Error ? error.message : String(error)}`;
});
