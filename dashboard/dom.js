// @ts-check
/* global document -- browser globals (the project ESLint config knows Node globals only) */
/** Small DOM helpers: elements are built with textContent only, so no server value is ever parsed as HTML. */

/**
 * @param {string} tag
 * @param {Record<string, string | number | boolean | null | undefined | ((event: Event) => void)>} [attrs]
 *   `on<event>` keys are listeners; `false`/`null`/`undefined` values are left out.
 * @param {...(Node | string | number | null | undefined | false)} children
 * @returns {HTMLElement}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === false || value === null || value === undefined) continue;
    if (typeof value === 'function') el.addEventListener(key.slice(2).toLowerCase(), value);
    else if (key === 'class') el.className = String(value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, ...children);
  return el;
}

/** @param {Element} el @param {...(Node | string | number | null | undefined | false)} children */
export function append(el, ...children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === 'number' ? String(child) : child);
  }
}

/** Replaces the element's children. @param {Element} el @param {...(Node | string | number | null | undefined | false)} children */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, ...children);
}

/** @param {string} id */
export function byId(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} is missing from the page`);
  return el;
}

/** The first 8 and last 4 characters of a long hex value, the full value in a tooltip. @param {unknown} value */
export function shortHex(value) {
  const text = value === null || value === undefined ? '' : String(value);
  const short = text.length > 16 ? `${text.slice(0, 8)}…${text.slice(-4)}` : text;
  return h('code', { class: 'hex', title: text }, short || '—');
}

/** @param {number | null | undefined} n @param {number} [digits] */
export function num(n, digits = 0) {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

/** Credits keep their precision (prices go down to 1e-5). @param {number | null | undefined} n */
export function credits(n) {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  return n.toLocaleString('en-US', { maximumFractionDigits: 8 });
}

/** @param {number} bytes */
export function bytes(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** ISO 8601 as local date and time, the ISO text in a tooltip. @param {string | null | undefined} iso */
export function time(iso) {
  if (!iso) return h('span', {}, '—');
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return h('span', {}, iso);
  return h(
    'time',
    { datetime: iso, title: iso },
    date.toLocaleString('en-GB', { dateStyle: 'short', timeStyle: 'medium' }),
  );
}

/** A table with a caption, column headers and rows; an empty state row when there are none.
 * @param {{ caption: string, columns: string[], rows: HTMLElement[], empty: string, id?: string }} spec */
export function table({ caption, columns, rows, empty, id }) {
  const body = h('tbody', {});
  if (rows.length === 0) append(body, h('tr', { class: 'empty' }, h('td', { colspan: columns.length }, empty)));
  else append(body, ...rows);
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { id },
      h('caption', {}, caption),
      h('thead', {}, h('tr', {}, ...columns.map((c) => h('th', { scope: 'col' }, c)))),
      body,
    ),
  );
}

/** A `<td>`. @param {...(Node | string | number | null | undefined | false)} children */
export const td = (...children) => h('td', {}, ...children);

/** A labelled badge (status words are in the text, colour is only a hint). @param {string} text @param {string} kind */
export const badge = (text, kind) => h('span', { class: `badge badge-${kind}` }, text);

/** A figure with its label and a note. @param {string} label @param {string} value @param {string} [note] */
export function card(label, value, note = '') {
  return h(
    'div',
    { class: 'card' },
    h('p', { class: 'card-label' }, label),
    h('p', { class: 'card-value' }, value),
    note ? h('p', { class: 'card-note' }, note) : null,
  );
}

/** Shows or hides an error paragraph. @param {HTMLElement} el @param {string} message */
export function showError(el, message) {
  el.hidden = message === '';
  el.textContent = message;
}

/** "1 cell", "2 cells". @param {number} n @param {string} word */
export const plural = (n, word) => `${num(n)} ${word}${n === 1 ? '' : 's'}`;
