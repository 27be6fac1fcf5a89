/**
 * The compliance report dashboard, an MCP App (the ext-apps extension, SEP-1865): `idn_get_compliance_report`
 * carries `_meta.ui.resourceUri = REPORT_UI_URI`, and the server serves this page as that resource with
 * `REPORT_UI_MIME`. Hosts without MCP-App support show the tool's JSON text instead.
 *
 * The page is self-contained (inline CSS and script, no network: its CSP forbids every fetch and every
 * external resource). It speaks the MCP Apps postMessage protocol (JSON-RPC 2.0 with the parent window):
 * it sends `ui/initialize`, then `ui/notifications/initialized`, and renders the report carried by
 * `ui/notifications/tool-result` (the CallToolResult: `structuredContent`, or the JSON in `content[].text`).
 * In OpenAI Apps SDK hosts it reads `window.openai.toolOutput` instead. Report values reach the page only
 * through `textContent` and numeric style widths: data is never parsed as HTML.
 */

export const REPORT_UI_URI = 'ui://geofabric/compliance-report.html';
export const REPORT_UI_MIME = 'text/html;profile=mcp-app';
/** The MCP Apps protocol version the page announces in `ui/initialize`. */
export const REPORT_UI_PROTOCOL_VERSION = '2026-01-26';

const STYLE = `
:root { color-scheme: light dark; --fg: #1d2430; --muted: #5d6878; --bg: #ffffff; --card: #f4f6f9; --line: #dde2ea;
  --ok: #1f7a3d; --bad: #b3261e; --warn: #9a6100; --accent: #2f5fb3; }
:root[data-theme="dark"] { --fg: #e6e9ef; --muted: #9aa4b5; --bg: #161a21; --card: #1f2530; --line: #2e3644;
  --ok: #5cc77f; --bad: #f2877f; --warn: #e0b25c; --accent: #7aa7f5; }
* { box-sizing: border-box; }
body { margin: 0; padding: 16px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
h1 { font-size: 17px; margin: 0 0 2px; }
h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); margin: 18px 0 6px; }
.sub { color: var(--muted); font-size: 12px; word-break: break-all; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(140px, 1fr)); gap: 8px; margin-top: 12px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
.label { color: var(--muted); font-size: 12px; }
.value { font-size: 22px; font-weight: 600; }
.ok { color: var(--ok); } .bad { color: var(--bad); } .warning { color: var(--warn); } .critical { color: var(--bad); }
.bar { height: 6px; background: var(--line); border-radius: 3px; overflow: hidden; margin-top: 6px; }
.bar > span { display: block; height: 100%; background: var(--accent); }
table { width: 100%; border-collapse: collapse; }
td, th { text-align: left; padding: 4px 6px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 500; font-size: 12px; }
td.num { text-align: right; font-variant-numeric: tabular-nums; width: 1%; white-space: nowrap; }
ul { margin: 0; padding-left: 18px; }
.cells { display: flex; flex-wrap: wrap; gap: 4px; }
.cells span { font-family: ui-monospace, monospace; font-size: 12px; background: var(--card); border: 1px solid var(--line); border-radius: 4px; padding: 1px 5px; }
.empty { color: var(--muted); font-style: italic; }
`;

// Plain ES2017 for any webview; no template literals (this file is one), no innerHTML.
const SCRIPT = `
(function () {
  'use strict';
  var PROTOCOL_VERSION = '${REPORT_UI_PROTOCOL_VERSION}';
  var root = document.getElementById('report');
  var nextId = 1;
  var pending = {};

  function post(message) { if (window.parent && window.parent !== window) window.parent.postMessage(message, '*'); }
  function request(method, params) {
    var id = nextId++;
    post({ jsonrpc: '2.0', id: id, method: method, params: params });
    return new Promise(function (resolve) { pending[id] = resolve; });
  }
  function notify(method, params) { post({ jsonrpc: '2.0', method: method, params: params }); }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function isObject(v) { return typeof v === 'object' && v !== null && !Array.isArray(v); }
  function num(v) { return typeof v === 'number' && isFinite(v) ? v : null; }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  function reportFrom(result) {
    if (!isObject(result)) return null;
    var data = isObject(result.structuredContent) ? result.structuredContent : null;
    if (!data && Array.isArray(result.content)) {
      for (var i = 0; i < result.content.length && !data; i++) {
        var block = result.content[i];
        if (isObject(block) && block.type === 'text' && typeof block.text === 'string') {
          try { var parsed = JSON.parse(block.text); if (isObject(parsed)) data = parsed; } catch (e) { /* not JSON */ }
        }
      }
    }
    if (!data && ('chain_verification' in result || 'trust_score' in result)) data = result;
    if (data && isObject(data.report)) data = data.report;
    return data;
  }

  function card(parent, label, value, className) {
    var c = el('div', 'card');
    c.appendChild(el('div', 'label', label));
    var v = el('div', 'value' + (className ? ' ' + className : ''), value);
    c.appendChild(v);
    parent.appendChild(c);
    return c;
  }
  function bar(parent, fraction) {
    var b = el('div', 'bar');
    var fill = el('span');
    fill.style.width = Math.max(0, Math.min(100, fraction * 100)).toFixed(1) + '%';
    b.appendChild(fill);
    parent.appendChild(b);
  }
  function row(table, cells, numeric) {
    var tr = el('tr');
    for (var i = 0; i < cells.length; i++) tr.appendChild(el('td', numeric && numeric[i] ? 'num' : '', cells[i]));
    table.appendChild(tr);
    return tr;
  }
  function head(table, names) {
    var tr = el('tr');
    for (var i = 0; i < names.length; i++) tr.appendChild(el('th', '', names[i]));
    table.appendChild(tr);
  }
  function violationDetail(v) {
    var parts = [];
    var skip = { type: 1, violation_type: 1, severity: 1 };
    for (var key in v) {
      if (!Object.prototype.hasOwnProperty.call(v, key) || skip[key]) continue;
      var value = v[key];
      if (value === null || typeof value === 'object') continue;
      parts.push(key + ': ' + String(value));
    }
    return parts.join(' · ');
  }

  function render(report) {
    if (!isObject(report)) return;
    clear(root);
    var chain = isObject(report.chain_verification) ? report.chain_verification : {};
    var period = isObject(report.reporting_period) ? report.reporting_period : {};

    root.appendChild(el('h1', '', 'Compliance report' + (report.agent_handle ? ': ' + report.agent_handle : '')));
    root.appendChild(el('div', 'sub', 'agent ' + (report.agent_pk || '?') + ' · principal ' + (report.principal_pk || '?')));
    root.appendChild(el('div', 'sub', 'period ' + (period.from || '?') + ' → ' + (period.to || '?') +
      (report.generated_at ? ' · generated ' + report.generated_at : '')));

    var cards = el('div', 'cards');
    var score = num(report.trust_score);
    var scoreCard = card(cards, 'Trust score', score === null ? '–' : score.toFixed(1));
    if (score !== null) bar(scoreCard, score / 100);
    card(cards, 'Tier', report.current_tier || '–');
    var valid = chain.is_valid === true;
    card(cards, 'Chain', valid ? 'valid' : chain.is_valid === false ? 'broken' : '–', valid ? 'ok' : 'bad');
    card(cards, 'Blocks', num(chain.block_count) === null ? '–' : chain.block_count);
    card(cards, 'Operations', num(report.total_operations) === null ? '–' : report.total_operations);
    var violations = Array.isArray(report.violations) ? report.violations : [];
    card(cards, 'Violations', violations.length, violations.length ? 'bad' : 'ok');
    if (num(report.human_approvals_required) !== null) {
      card(cards, 'Human approvals', (report.human_approvals_received || 0) + ' / ' + report.human_approvals_required);
    }
    root.appendChild(cards);

    root.appendChild(el('h2', '', 'Chain verification'));
    var issues = Array.isArray(chain.issues) ? chain.issues : [];
    root.appendChild(el('div', 'sub', (chain.first_block_at || '?') + ' → ' + (chain.last_block_at || '?') +
      (Array.isArray(report.epochs) ? ' · ' + report.epochs.length + ' epochs' : '')));
    if (issues.length) {
      var list = el('ul', 'bad');
      for (var i = 0; i < issues.length; i++) list.appendChild(el('li', '', issues[i]));
      root.appendChild(list);
    } else {
      root.appendChild(el('div', 'empty', 'no issues'));
    }

    root.appendChild(el('h2', '', 'Operations by tool'));
    var ops = isObject(report.operations_by_tool) ? report.operations_by_tool : {};
    var tools = Object.keys(ops).sort(function (a, b) { return (num(ops[b]) || 0) - (num(ops[a]) || 0) || (a < b ? -1 : 1); });
    if (tools.length) {
      var max = num(ops[tools[0]]) || 1;
      var table = el('table');
      for (var t = 0; t < tools.length; t++) {
        var tr = row(table, [tools[t], ops[tools[t]]], [false, true]);
        bar(tr.firstChild, (num(ops[tools[t]]) || 0) / max);
      }
      root.appendChild(table);
    } else {
      root.appendChild(el('div', 'empty', 'no operations'));
    }

    root.appendChild(el('h2', '', 'Jurisdiction cells'));
    var cells = Array.isArray(report.jurisdiction_cells) ? report.jurisdiction_cells : [];
    var cellBox = el('div', 'cells');
    for (var c = 0; c < cells.length; c++) cellBox.appendChild(el('span', '', cells[c]));
    root.appendChild(cells.length ? cellBox : el('div', 'empty', 'no cells'));

    root.appendChild(el('h2', '', 'Violations'));
    if (violations.length) {
      var vt = el('table');
      head(vt, ['type', 'severity', 'detail']);
      for (var v = 0; v < violations.length; v++) {
        var item = isObject(violations[v]) ? violations[v] : {};
        var vr = row(vt, [item.type || item.violation_type || '?', item.severity || '?', violationDetail(item)]);
        vr.children[1].className = item.severity === 'critical' ? 'critical' : 'warning';
      }
      root.appendChild(vt);
    } else {
      root.appendChild(el('div', 'empty', 'no violations'));
    }
  }

  function applyContext(context) {
    if (isObject(context) && (context.theme === 'dark' || context.theme === 'light')) {
      document.documentElement.setAttribute('data-theme', context.theme);
    }
  }

  window.addEventListener('message', function (event) {
    if (event.source !== window.parent) return;
    var msg = event.data;
    if (!isObject(msg) || msg.jsonrpc !== '2.0') return;
    if (msg.method === undefined && msg.id !== undefined && pending[msg.id]) {
      var resolve = pending[msg.id];
      delete pending[msg.id];
      resolve(msg);
    } else if (msg.method === 'ui/notifications/tool-result') {
      render(reportFrom(msg.params));
    } else if (msg.method === 'ui/notifications/host-context-changed') {
      applyContext(msg.params);
    } else if (msg.id !== undefined && (msg.method === 'ui/resource-teardown' || msg.method === 'ping')) {
      post({ jsonrpc: '2.0', id: msg.id, result: {} });
    }
  });

  // OpenAI Apps SDK hosts put the tool result on window.openai and announce changes with an event.
  window.addEventListener('openai:set_globals', function (event) {
    var globals = event && event.detail && event.detail.globals;
    if (isObject(globals) && isObject(globals.toolOutput)) render(reportFrom(globals.toolOutput));
  });
  if (isObject(window.openai) && isObject(window.openai.toolOutput)) render(reportFrom(window.openai.toolOutput));

  if (window.parent && window.parent !== window) {
    request('ui/initialize', {
      protocolVersion: PROTOCOL_VERSION,
      appInfo: { name: 'geofabric-compliance-report', version: '1.0.0' },
      appCapabilities: {}
    }).then(function (response) {
      if (isObject(response.result)) applyContext(response.result.hostContext);
      notify('ui/notifications/initialized', {});
      if (typeof ResizeObserver === 'function') {
        new ResizeObserver(function () {
          var d = document.documentElement;
          notify('ui/notifications/size-changed', { width: d.scrollWidth, height: d.scrollHeight });
        }).observe(document.documentElement);
      }
    });
  }
})();
`;

/** The dashboard page: static (no report data is interpolated server-side). */
export function renderReportUi(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>Geofabric compliance report</title>
<style>${STYLE}</style>
</head>
<body>
<main id="report"><p class="empty">Waiting for the compliance report…</p></main>
<script>${SCRIPT}</script>
</body>
</html>
`;
}
