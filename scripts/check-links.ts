/**
 * Checks the relative links of the repository's Markdown: every `[text](path)`, `[text](path#anchor)` and
 * `[text](#anchor)` in README.md, docs/*.md and the other tracked Markdown files must name a file or folder
 * inside the repository and, with an anchor, a heading of that Markdown file (GitHub's slugs). External links
 * (http:, https:, mailto:) are not fetched. Exit 1 listing the broken links.
 *
 *   tsx scripts/check-links.ts [files…]     default: every tracked *.md outside test/fixtures
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** GitHub's heading anchor: lower case, punctuation dropped (keeping `-` and `_`), spaces to `-`. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/<[^>]+>/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The heading text as rendered: inline code, emphasis and link markup stripped. */
function headingText(raw: string): string {
  return raw
    .replace(/\s+#+\s*$/, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '');
}

/** Text outside fenced code blocks and inline code, line by line (links in code are not links). */
function proseLines(text: string): string[] {
  let fence: string | undefined;
  return text.split('\n').map((line) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker !== undefined) {
      if (fence === undefined) fence = marker[0];
      else if (marker[0] === fence) fence = undefined;
      return '';
    }
    return fence === undefined ? line.replace(/`[^`]*`/g, '') : '';
  });
}

/** The anchors of a Markdown text: each heading's slug, numbered like GitHub's when repeated, and explicit ids. */
export function anchors(text: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | undefined;
  for (const line of text.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker !== undefined) {
      if (fence === undefined) fence = marker[0];
      else if (marker[0] === fence) fence = undefined;
      continue;
    }
    if (fence !== undefined) continue;
    const heading = /^#{1,6}\s+(.*)$/.exec(line);
    if (heading) {
      const base = slug(headingText(heading[1]!));
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      out.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const m of line.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) out.add(m[1]!);
  }
  return out;
}

export interface BrokenLink {
  file: string;
  line: number;
  target: string;
  reason: string;
}

/** The broken relative links of one Markdown file (a path relative to the repository root). */
export function checkFile(file: string, root = ROOT): BrokenLink[] {
  const path = join(root, file);
  const broken: BrokenLink[] = [];
  proseLines(readFileSync(path, 'utf8')).forEach((line, index) => {
    // [text](target) and [text](target "title"); images too.
    for (const m of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto: …
      const report = (reason: string) => broken.push({ file, line: index + 1, target, reason });
      const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
      const resolved = pathPart === '' ? path : resolve(dirname(path), decodeURIComponent(pathPart));
      const inside = relative(root, resolved);
      if (inside.startsWith('..') || resolve(inside) === inside) {
        report('points outside the repository');
        continue;
      }
      if (!existsSync(resolved)) {
        report('no such file');
        continue;
      }
      if (anchor === undefined || anchor === '') continue;
      if (!resolved.endsWith('.md') || statSync(resolved).isDirectory()) {
        if (!/^L\d+(-L\d+)?$/.test(anchor)) report('an anchor on a file that is not Markdown');
        continue;
      }
      if (!anchors(readFileSync(resolved, 'utf8')).has(decodeURIComponent(anchor).toLowerCase()))
        report(`no heading #${anchor}`);
    }
  });
  return broken;
}

/** The tracked Markdown files (every *.md on disk when this is not a git checkout). */
function trackedMarkdown(): string[] {
  let files: string[];
  try {
    files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.md'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).split('\n');
  } catch {
    files = walk('');
  }
  return files
    .filter((f) => f !== '' && !f.startsWith('test/fixtures/') && !f.startsWith('node_modules/'))
    .filter((f) => existsSync(join(ROOT, f)));
}

function walk(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = dir === '' ? entry.name : `${dir}/${entry.name}`;
    if (entry.isDirectory()) return ['node_modules', '.git', 'data'].includes(entry.name) ? [] : walk(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

function main(argv: string[]): number {
  const targets = argv.length > 0 ? argv.map((f) => relative(ROOT, resolve(f))) : trackedMarkdown();
  const broken = targets.flatMap((file) => checkFile(file));
  for (const b of broken) process.stderr.write(`${b.file}:${b.line}: ${b.target}: ${b.reason}\n`);
  if (broken.length > 0) {
    process.stderr.write(`${broken.length} broken link(s) in ${targets.length} Markdown files\n`);
    return 1;
  }
  process.stdout.write(`links: ${targets.length} Markdown files, every relative link resolves\n`);
  return 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1])
  process.exitCode = main(process.argv.slice(2));
