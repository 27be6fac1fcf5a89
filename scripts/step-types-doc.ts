/**
 * Writes the step types table of docs/protocol.md §1.2 from the registry (core/step-types/), so the table
 * cannot drift from the types the gateway accepts.
 *
 *   tsx scripts/step-types-doc.ts            print the table
 *   tsx scripts/step-types-doc.ts --write    rewrite the table in docs/protocol.md
 *   tsx scripts/step-types-doc.ts --check    exit 1 when docs/protocol.md's table differs from the registry
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stepTypeDocRows } from '../core/step-types/index.js';

export const PROTOCOL_DOC_PATH = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'protocol.md');
export const BEGIN = '<!-- step-types:begin (scripts/step-types-doc.ts writes this table from core/step-types/) -->';
export const END = '<!-- step-types:end -->';

export const stepTypesTable = (): string =>
  ['| Step type | What runs | State in this build |', '|---|---|---|', ...stepTypeDocRows()].join('\n');

/** `doc` with the table between the markers replaced; throws when the markers are missing. */
export function withStepTypesTable(doc: string): string {
  const begin = doc.indexOf(BEGIN);
  const end = doc.indexOf(END, begin);
  if (begin < 0 || end < 0) throw new Error(`docs/protocol.md has no ${BEGIN} … ${END} block`);
  return `${doc.slice(0, begin + BEGIN.length)}\n\n${stepTypesTable()}\n\n${doc.slice(end)}`;
}

function main(argv: readonly string[]): number {
  const doc = readFileSync(PROTOCOL_DOC_PATH, 'utf8');
  const next = withStepTypesTable(doc);
  if (argv.includes('--write')) {
    if (next !== doc) writeFileSync(PROTOCOL_DOC_PATH, next);
    return 0;
  }
  if (argv.includes('--check')) {
    if (next === doc) return 0;
    console.error('docs/protocol.md §1.2 differs from core/step-types/: run npx tsx scripts/step-types-doc.ts --write');
    return 1;
  }
  console.log(stepTypesTable());
  return 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1])
  process.exitCode = main(process.argv.slice(2));
