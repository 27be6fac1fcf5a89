import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createStepActivities } from '../../activities/compute/step-activities.js';
import { DEFAULT_JOB_CELL } from '../../core/h3-cell.js';
import { COLLECTION_PAYLOAD_TYPES } from '../../core/proof-types.js';
import {
  STEP_ACTIVITY,
  STEP_TYPE_SPECS,
  STEP_TYPES,
  requestStepSchema,
  stepTypeSpec,
  type RequestStep,
} from '../../core/step-types/index.js';
import { BEGIN, END, PROTOCOL_DOC_PATH, withStepTypesTable } from '../../scripts/step-types-doc.js';

const ROOT = resolve(import.meta.dirname, '../..');

/** The smallest valid step of each type (sensor_fusion needs its quantity). */
const minimalStep = (type: (typeof STEP_TYPES)[number]): RequestStep =>
  ({ id: 's', type, ...(type === 'sensor_fusion' ? { quantity: 'pm2_5' } : {}) }) as RequestStep;

/**
 * Where a file spells out the list of step types: a run of names of registry types, each within `gap`
 * characters of the previous, that names every type. A job's steps or a certificate's facets name a few types
 * far apart or not all of them; a list names them all, side by side.
 */
export function stepTypeLists(text: string, types: readonly string[], gap = 40): number[] {
  const names = new RegExp(`(?<![A-Za-z0-9_])(${types.join('|')})(?![A-Za-z0-9_])`, 'g');
  const hits = [...text.matchAll(names)].map((m) => ({ at: m.index, type: m[1]! }));
  const lines: number[] = [];
  for (let i = 0; i < hits.length; i++) {
    const seen = new Set([hits[i]!.type]);
    let j = i + 1;
    for (; j < hits.length && hits[j]!.at - hits[j - 1]!.at <= gap; j++) seen.add(hits[j]!.type);
    if (seen.size === types.length) {
      lines.push(text.slice(0, hits[i]!.at).split('\n').length);
      i = j - 1;
    }
  }
  return lines;
}

/** The registry's own files, recorded data, and the table the docs script writes. */
const exempt = (path: string): boolean =>
  path.startsWith('core/step-types/') || path.startsWith('test/fixtures/') || path === 'package-lock.json';

const withoutGenerated = (text: string): string => {
  const begin = text.indexOf(BEGIN);
  const end = text.indexOf(END, begin);
  return begin < 0 || end < 0 ? text : text.slice(0, begin) + text.slice(end);
};

/** Files below `root`, relative, leaving out what is installed, built or generated at run time. */
function sourceFiles(root: string, dir = ''): string[] {
  const skip = new Set(['node_modules', '.git', 'dist', 'data', 'data-demo', 'coverage', 'test-artifacts', '.venv']);
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = dir === '' ? entry.name : `${dir}/${entry.name}`;
    if (entry.isDirectory())
      return skip.has(entry.name) || entry.name.startsWith('venv') ? [] : sourceFiles(root, path);
    return entry.isFile() ? [path] : [];
  });
}

describe('the step-type registry (core/step-types/)', () => {
  it('is the only place that lists the step types', () => {
    // The source tree as it is on disk (CI runs the suite in a copy that is not a git checkout).
    const files = sourceFiles(ROOT).filter(
      (path) => !exempt(path) && /\.(ts|js|mjs|cjs|json|md|py|ya?ml|html|sh)$/.test(path),
    );
    const offenders: string[] = [];
    for (const path of files) {
      let text: string;
      try {
        text = readFileSync(join(ROOT, path), 'utf8');
      } catch {
        continue; // listed but deleted in the work tree
      }
      for (const line of stepTypeLists(withoutGenerated(text), STEP_TYPES)) offenders.push(`${path}:${line}`);
    }
    assert.deepEqual(offenders, [], 'derive these from core/step-types/index.ts (STEP_TYPES, STEP_TYPE_SPECS)');
  });

  it('finds a list of the types, and not a job that names them far apart', () => {
    const types = ['inference', 'tile_render', 'image_process'];
    assert.deepEqual(stepTypeLists("const T = ['inference', 'tile_render', 'image_process'];", types), [1]);
    assert.deepEqual(stepTypeLists('x\n`inference`, `tile_render` or `image_process`', types), [2]);
    const job = `{ id: 'a', type: 'inference', messages: [{ role: 'user', content: 'hello' }] },
      { id: 'b', type: 'tile_render', depends_on: 'a', zoom: 12, style: 'osm-bright' },
      { id: 'c', type: 'image_process', operation: 'ndvi' }`;
    assert.deepEqual(stepTypeLists(job, types), []);
    assert.deepEqual(stepTypeLists("facets: ['inference', 'tile_render']", types), []);
    assert.deepEqual(stepTypeLists("'inference_x', 'tile_render', 'image_process'", types), []);
  });

  it('gives every type an activity that createStepActivities makes, under a distinct name', () => {
    const activities = createStepActivities({
      swarm: { runInference: () => Promise.reject(new Error('unused')) },
      tiles: { renderTile: () => Promise.reject(new Error('unused')) },
      imagery: { processImage: () => Promise.reject(new Error('unused')) },
      nodePk: 'ab'.repeat(32),
    });
    for (const type of STEP_TYPES) {
      assert.equal(typeof (activities as Record<string, unknown>)[STEP_ACTIVITY[type]], 'function', type);
    }
    assert.equal(new Set(Object.values(STEP_ACTIVITY)).size, STEP_TYPES.length);
  });

  it('declares payload types the proof layer accepts', () => {
    for (const type of STEP_TYPES) {
      const { collection, payloadTypes } = STEP_TYPE_SPECS[type].records;
      const accepted = (COLLECTION_PAYLOAD_TYPES as Record<string, readonly string[]>)[collection];
      assert.ok(accepted, `${type}: collection ${collection}`);
      for (const payloadType of payloadTypes) assert.ok(accepted.includes(payloadType), `${type}: ${payloadType}`);
    }
  });

  it('estimates every type at entry by its own price function of its worst case', () => {
    const entry = { jobCell: DEFAULT_JOB_CELL, epoch: 2, epochGenesisMs: 0, epochMs: 3_600_000 };
    for (const type of STEP_TYPES) {
      const spec = stepTypeSpec(type);
      const worst = spec.worstCase(minimalStep(type), entry);
      assert.ok(worst.ok, type);
      const credits = spec.price(worst.value as never);
      assert.ok(Number.isFinite(credits) && credits > 0, `${type}: ${credits}`);
    }
  });

  it('accepts the smallest step of each type and refuses an unknown type naming the types', () => {
    for (const type of STEP_TYPES) assert.ok(requestStepSchema.safeParse(minimalStep(type)).success, type);
    const unknown = requestStepSchema.safeParse({ id: 's', type: 'teleport' });
    assert.equal(unknown.success, false);
    assert.equal(unknown.error!.issues[0]!.path.join('.'), 'type');
    for (const type of STEP_TYPES) assert.match(unknown.error!.issues[0]!.message, new RegExp(`"${type}"`));
  });

  it('refuses on each type the fields only other types declare', () => {
    const own = (type: (typeof STEP_TYPES)[number]) => new Set(Object.keys(STEP_TYPE_SPECS[type].fields));
    for (const type of STEP_TYPES) {
      for (const other of STEP_TYPES) {
        for (const field of own(other)) {
          if (own(type).has(field)) continue;
          const parsed = requestStepSchema.safeParse({ ...minimalStep(type), [field]: undefined, [field + '']: 1 });
          assert.equal(parsed.success, false, `${field} on ${type}`);
          assert.match(parsed.error!.issues[0]!.message, new RegExp(`"${field}" is not a field of a ${type} step`));
        }
      }
    }
  });

  it('keeps the docs/protocol.md §1.2 table as the registry writes it', () => {
    const doc = readFileSync(PROTOCOL_DOC_PATH, 'utf8');
    assert.equal(withStepTypesTable(doc), doc, 'run npx tsx scripts/step-types-doc.ts --write');
  });
});
