// @ts-check
/* global document, window, location -- browser globals (the project ESLint config knows Node's only) */
/**
 * The API reference page: fetches the gateway's `/openapi.json` and draws the view model of reference-model.js.
 * Elements are built with textContent only (no HTML parsing of document text), and nothing is loaded from
 * anywhere but this origin (the dashboard's Content-Security-Policy allows nothing else).
 */
import { buildReferenceModel, filterModel } from './reference-model.js';

/** @typedef {import('./reference-model.js').ReferenceModel} ReferenceModel */
/** @typedef {import('./reference-model.js').OperationView} OperationView */
/** @typedef {import('./reference-model.js').SchemaNode} SchemaNode */

/**
 * @param {string} tag
 * @param {Record<string, string | undefined>} [attrs]
 * @param {...(Node | string | null | undefined | false)} children
 * @returns {HTMLElement}
 */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined) continue;
    if (key === 'class') el.className = value;
    else el.setAttribute(key, value);
  }
  for (const child of children) if (child !== null && child !== undefined && child !== false) el.append(child);
  return el;
}

/** An anchor-safe id. @param {string} text */
const anchor = (text) => text.replace(/[^A-Za-z0-9_-]+/g, '-');

/** Text with `code spans` as <code>, in a `tag` element. @param {string} text @param {string} [tag] */
function prose(text, tag = 'p') {
  const el = h(tag, { class: 'prose' });
  text.split(/(`[^`]+`)/).forEach((part) => {
    if (part.startsWith('`') && part.endsWith('`') && part.length > 1) el.append(h('code', {}, part.slice(1, -1)));
    else if (part) el.append(part);
  });
  return el;
}

/** One schema node and its children as nested lists. @param {SchemaNode} node @returns {HTMLElement} */
function schemaItem(node) {
  const head = h(
    'div',
    { class: 'field' },
    node.name ? h('span', { class: 'field-name' }, node.name) : null,
    h('span', { class: node.ref ? 'field-type ref' : 'field-type' }, node.type),
    node.ref && node.type !== node.ref ? h('span', { class: 'field-ref' }, node.ref) : null,
    node.required && node.name ? h('span', { class: 'badge required' }, 'required') : null,
    node.nullable ? h('span', { class: 'badge' }, 'nullable') : null,
    ...node.facts.map((fact) => h('span', { class: 'fact' }, fact)),
  );
  const item = h('li', {}, head, node.description ? prose(node.description) : null);
  if (node.children.length > 0) item.append(h('ul', { class: 'tree' }, ...node.children.map(schemaItem)));
  return item;
}

/** @param {SchemaNode} node */
const schemaTree = (node) => h('ul', { class: 'tree root' }, schemaItem(node));

/** @param {OperationView} op */
function operationSection(op) {
  const details = h('details', { class: 'operation', id: anchor(op.id) });
  details.append(
    h(
      'summary',
      {},
      h('span', { class: `method method-${op.method.toLowerCase()}` }, op.method),
      h('code', { class: 'path' }, op.path),
      h('span', { class: 'op-summary' }, op.summary),
    ),
  );
  const body = h('div', { class: 'op-body' });
  if (op.description) body.append(prose(op.description));
  body.append(h('p', { class: 'security' }, h('strong', {}, 'Auth: '), op.security));

  const own = op.parameters.filter((p) => p.in !== 'header');
  const headers = op.parameters.filter((p) => p.in === 'header');
  if (own.length > 0) {
    body.append(h('h4', {}, 'Parameters'));
    const table = h(
      'table',
      { class: 'params' },
      h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'In'), h('th', {}, 'Schema')),
    );
    for (const p of own) {
      table.append(
        h(
          'tr',
          {},
          h('td', {}, h('code', {}, p.name), p.required ? h('span', { class: 'badge required' }, 'required') : null),
          h('td', {}, p.in),
          h(
            'td',
            {},
            p.description ? prose(p.description) : null,
            schemaTree({ ...p.schema, name: '', description: '' }),
          ),
        ),
      );
    }
    body.append(table);
  }
  if (headers.length > 0) {
    body.append(
      h(
        'p',
        { class: 'headers' },
        h('strong', {}, 'Optional headers: '),
        ...headers.flatMap((p, i) => [i > 0 ? ', ' : '', h('code', { title: p.description }, p.name)]),
      ),
    );
  }
  if (op.body) {
    body.append(h('h4', {}, `Request body (${op.body.contentTypes.join(', ')})`), schemaTree(op.body.schema));
  }
  body.append(h('h4', {}, 'Responses'));
  for (const response of op.responses) {
    const block = h(
      'div',
      { class: `response status-${response.status[0] ?? 'd'}` },
      h(
        'div',
        { class: 'response-head' },
        h('span', { class: 'status' }, response.status),
        response.errorCodes.length > 0 ? null : prose(response.description, 'span'),
        response.contentTypes.length > 0 ? h('span', { class: 'media' }, response.contentTypes.join(', ')) : null,
      ),
    );
    if (response.errorCodes.length > 0) {
      block.append(
        h('p', { class: 'codes' }, ...response.errorCodes.map((code) => h('code', { class: 'code' }, code))),
      );
    } else if (response.schema) block.append(schemaTree(response.schema));
    if (response.headers.length > 0) {
      const list = h('ul', { class: 'response-headers' });
      for (const header of response.headers)
        list.append(h('li', {}, h('code', {}, header.name), ' ', header.description));
      block.append(list);
    }
    body.append(block);
  }
  details.append(body);
  return details;
}

/** @param {ReferenceModel} model */
function render(model) {
  const nav = /** @type {HTMLElement} */ (document.getElementById('tags'));
  const main = /** @type {HTMLElement} */ (document.getElementById('operations'));
  nav.replaceChildren(
    ...model.tags.map((tag) =>
      h('li', {}, h('a', { href: `#tag-${anchor(tag.name)}` }, tag.name), ` ${tag.operations.length}`),
    ),
  );
  main.replaceChildren(
    ...model.tags.map((tag) =>
      h(
        'section',
        { class: 'tag', id: `tag-${anchor(tag.name)}` },
        h('h2', {}, tag.name),
        tag.description ? prose(tag.description) : null,
        ...tag.operations.map(operationSection),
      ),
    ),
  );
  if (model.tags.length === 0) main.append(h('p', { class: 'empty' }, 'No operation matches.'));
}

/** @param {ReferenceModel} model */
function renderErrors(model) {
  const table = /** @type {HTMLElement} */ (document.getElementById('error-table'));
  table.replaceChildren(
    h('tr', {}, h('th', {}, 'Code'), h('th', {}, 'Status')),
    ...model.errors.map((e) => h('tr', {}, h('td', {}, h('code', {}, e.code)), h('td', {}, e.statuses.join(', ')))),
  );
}

async function main() {
  const status = /** @type {HTMLElement} */ (document.getElementById('status'));
  const specUrl = new URL('/openapi.json', location.href);
  let model;
  try {
    const res = await fetch(specUrl, { headers: { accept: 'application/json' } });
    if (!res.ok) throw new Error(`${specUrl.pathname} answered ${res.status}`);
    model = buildReferenceModel(await res.json());
  } catch (error) {
    status.textContent = `Could not load the reference: ${/** @type {Error} */ (error).message}`;
    status.classList.add('error');
    return;
  }
  document.title = `${model.title} ${model.version} — reference`;
  /** @type {HTMLElement} */ (document.getElementById('title')).textContent = model.title;
  /** @type {HTMLElement} */ (document.getElementById('version')).textContent = `version ${model.version}`;
  /** @type {HTMLElement} */ (document.getElementById('servers')).textContent = `server: ${model.servers.join(', ')}`;
  const intro = /** @type {HTMLElement} */ (document.getElementById('intro'));
  intro.replaceChildren(prose(model.description));
  status.textContent = `${model.operationCount} operations`;
  renderErrors(model);
  render(model);

  const search = /** @type {HTMLInputElement} */ (document.getElementById('search'));
  search.addEventListener('input', () => {
    const shown = filterModel(model, search.value);
    render(shown);
    // Searching is for finding: matches open.
    if (search.value.trim()) for (const d of document.querySelectorAll('details.operation')) d.setAttribute('open', '');
  });
  // A link to an operation (#operationId) opens it, on load and when the hash changes.
  const openTarget = () => {
    const target = location.hash ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
    if (target instanceof window.HTMLDetailsElement) {
      target.open = true;
      target.scrollIntoView();
    }
  };
  window.addEventListener('hashchange', openTarget);
  openTarget();
}

void main();
