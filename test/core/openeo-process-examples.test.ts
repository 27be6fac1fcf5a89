/**
 * The official examples of every implemented openEO process (test/fixtures/openeo/process-tests, from
 * openeo-processes `tests/`), run against core/openeo's implementations as the examples' README says: no-data is
 * null, numbers compared to 10 decimals unless a case gives `delta`, `throws` names the exception, a case that
 * gives both `returns` and `throws` passes with either. A case is skipped, with its reason, when it needs a
 * process this back-end does not implement or an asset the upstream folder does not hold, or when it contradicts
 * the process definition (KNOWN_DIVERGENCES). The summary line gives passed / applicable / skipped.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runInNewContext } from 'node:vm';
import { DEFINITIONS_BY_ID } from '../../api/openeo/process-definitions.js';
import { isCube, makeCube, type Cube, type Dimension } from '../../core/openeo/cube.js';
import { OpenEoError } from '../../core/openeo/errors.js';
import { Callback, checkProcessGraph, evaluateGraph, type Registry } from '../../core/openeo/graph.js';
import { PROCESS_IMPLEMENTATIONS, type OpenEoEnv } from '../../core/openeo/processes.js';
import { LabeledArray } from '../../core/openeo/values.js';

const here = dirname(fileURLToPath(import.meta.url));
const FOLDER = join(here, '..', 'fixtures', 'openeo', 'process-tests');

/**
 * JSON5 is a subset of ECMAScript 5 expressions (comments, NaN, Infinity, unquoted keys, trailing commas),
 * evaluated in an empty context; the clone brings its objects into this realm (Array.prototype included).
 */
const readJson5 = (path: string): unknown =>
  structuredClone(runInNewContext(`(${readFileSync(path, 'utf8')})`, Object.create(null)) as unknown);

/**
 * Cases whose expected answer contradicts the process's own definition, with the reason. They are reported as
 * skipped, not passed.
 */
const KNOWN_DIVERGENCES: Record<string, string> = {
  'array_element#4':
    'the case asks for label "BO2" (letter O) of keys B01, B02, B03 and expects 5; no key is "BO2", so the ' +
    'definition requires ArrayElementNotAvailable (case #9 asks for "BO4" and expects exactly that)',
  'mask#1':
    'the expected cube replaces the pixels where the mask is 0 and keeps those where it is 1; the definition ' +
    'replaces the pixels whose mask value is non-zero or true',
  'mask#3': 'as mask#1, with a replacement value: the expected cube replaces where the mask is 0',
  'apply#2':
    'its callback refers to its parameter with `from_argument`, which openEO API 1.2.0 does not define ' +
    '(`from_parameter`): taken as a plain object, it is no number',
  'apply#3':
    'the expected cube has 1650 where the input has its no-data value 255 (blue, first row, last column); ' +
    'multiply keeps no-data, as the same case expects at the other no-data pixels',
  'filter_bands#5':
    'asks for bands ["red", "blue"] and expects labels ["blue", "green"]; the definition keeps the bands asked ' +
    'for, in the order asked',
  'lte#16': 'expects lte(Infinity, Infinity) to be false; IEEE 754, which the definition follows, says true',
  'reduce_dimension#2':
    'its reducer refers to other nodes with `from_argument`, which openEO API 1.2.0 does not define (`from_node`)',
};

const registry: Registry<OpenEoEnv> = { definitions: DEFINITIONS_BY_ID, implementations: PROCESS_IMPLEMENTATIONS };
const env: OpenEoEnv = {
  loadCollection: () => Promise.reject(new Error('the examples load no collection')),
};

class MissingAsset extends Error {}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** An example's datacube object as a Cube (values equal to its `nodata` become NaN). */
function toCube(spec: Record<string, unknown>): Cube {
  const order = spec.order as string[];
  const dimensions = spec.dimensions as Record<string, Record<string, unknown>>;
  const nodata = (Array.isArray(spec.nodata) ? spec.nodata : [spec.nodata]).filter((v) => v !== undefined);
  const dims: Dimension[] = order.map((name) => {
    const d = dimensions[name]!;
    const labels = (d.values as (string | number)[]) ?? [];
    const crs = typeof d.reference_system === 'string' ? Number(/\d+$/.exec(d.reference_system)?.[0]) : undefined;
    const type = d.type as Dimension['type'];
    return {
      name,
      type,
      labels,
      ...(d.axis === undefined ? {} : { axis: d.axis as 'x' | 'y' }),
      ...(type === 'spatial' ? { crs: crs ?? 4326 } : {}),
      ...(type === 'spatial' && labels.length > 1 ? { step: (labels[1] as number) - (labels[0] as number) } : {}),
    };
  });
  const flat: number[] = [];
  const walk = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(walk);
    else {
      const n = v === null || (isRecord(v) && v.type === 'nodata') ? NaN : (v as number | boolean);
      const value = typeof n === 'boolean' ? (n ? 1 : 0) : n;
      flat.push(nodata.some((x) => Object.is(x, value) || x === value) ? NaN : value);
    }
  };
  if (spec.data !== null) walk(spec.data);
  const size = dims.reduce((n, d) => n * d.labels.length, 1);
  const data = spec.data === null ? new Float64Array(size).fill(NaN) : Float64Array.from(flat);
  const bands = new Map<string, { name: string }>();
  for (const d of dims) if (d.type === 'bands') for (const l of d.labels) bands.set(String(l), { name: String(l) });
  return makeCube(dims, data, bands);
}

/** An example's argument or result as the processes take it. */
function convert(value: unknown, base: string): unknown {
  if (Array.isArray(value)) return value.map((v) => convert(v, base));
  if (!isRecord(value)) return value;
  if (typeof value.$ref === 'string') {
    if (!existsSync(join(base, value.$ref))) {
      throw new MissingAsset(`the asset ${value.$ref} is not in the upstream tests/assets folder`);
    }
    if (!/\.json5?$/.test(value.$ref)) {
      // The upstream README: the suite loads JSON and JSON5 only (here, a CRS given as WKT2 text).
      throw new MissingAsset(`the asset ${value.$ref} is not JSON; this back-end takes CRSs as EPSG codes only`);
    }
    const loaded = readJson5(join(base, value.$ref));
    return convert(loaded, base);
  }
  if (value.type === 'nodata') return null;
  if (value.type === 'datacube') return toCube(value);
  if (value.type === 'labeled-array') {
    const items = value.data as { key: string | number; value: unknown }[];
    return new LabeledArray(
      items.map((i) => i.key),
      items.map((i) => convert(i.value, base)),
    );
  }
  if (isRecord(value.process_graph)) {
    const graph = checkProcessGraph(value.process_graph, registry);
    return new Callback(graph, (params) => evaluateGraph(graph, registry, env, params));
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, convert(v, base)]));
}

async function runProcess(id: string, raw: Record<string, unknown>): Promise<unknown> {
  // The same checks a graph gets (unknown and missing parameters), on a one-node graph of the raw arguments.
  checkProcessGraph({ node: { process_id: id, arguments: stripValues(raw), result: true } }, registry);
  const definition = DEFINITIONS_BY_ID.get(id)!;
  const args: Record<string, unknown> = {};
  for (const p of definition.parameters) {
    if (Object.hasOwn(raw, p.name)) args[p.name] = convert(raw[p.name], FOLDER);
    else if (Object.hasOwn(p, 'default')) args[p.name] = p.default;
  }
  return PROCESS_IMPLEMENTATIONS.get(id)!(args, env);
}

/** The arguments with data replaced by null: the graph check reads names and callbacks, not values. */
const stripValues = (raw: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, isRecord(v) && isRecord(v.process_graph) ? v : null]));

function sameNumber(actual: number, expected: number, delta: number): boolean {
  if (Number.isNaN(expected)) return Number.isNaN(actual);
  if (!Number.isFinite(expected)) return actual === expected;
  return Math.abs(actual - expected) <= delta;
}

function assertSame(actual: unknown, expected: unknown, delta: number, where: string): void {
  if (isCube(expected)) {
    assert.ok(isCube(actual), `${where}: expected a data cube`);
    assert.deepEqual(
      actual.dims.map((d) => [d.name, d.type]),
      expected.dims.map((d) => [d.name, d.type]),
      `${where}: dimensions`,
    );
    actual.dims.forEach((d, i) =>
      assert.deepEqual(d.labels, expected.dims[i]!.labels, `${where}: labels of ${d.name}`),
    );
    assert.equal(actual.data.length, expected.data.length, `${where}: size`);
    actual.data.forEach((v, i) =>
      assert.ok(sameNumber(v, expected.data[i]!, delta), `${where}: value ${i}: ${v} ≠ ${expected.data[i]}`),
    );
    return;
  }
  if (typeof expected === 'number') {
    assert.equal(typeof actual, 'number', `${where}: ${String(actual)} is not a number`);
    assert.ok(sameNumber(actual as number, expected, delta), `${where}: ${String(actual)} ≠ ${expected}`);
    return;
  }
  assert.deepEqual(actual, expected, where);
}

const files = readdirSync(FOLDER).filter((f) => f.endsWith('.json5'));
const tally = { passed: 0, applicable: 0, skipped: [] as string[] };

describe('openEO process examples (openeo-processes tests/)', function () {
  after(() => {
    console.log(
      `    openEO process examples: ${tally.passed} passed / ${tally.applicable} applicable; ` +
        `${tally.skipped.length} skipped:\n${tally.skipped.map((s) => `      - ${s}`).join('\n')}`,
    );
  });

  it('holds the examples of exactly the implemented processes', () => {
    assert.deepEqual(files.map((f) => f.replace('.json5', '')).sort(), [...PROCESS_IMPLEMENTATIONS.keys()].sort());
  });

  for (const file of files) {
    const doc = readJson5(join(FOLDER, file)) as { id: string; tests: Record<string, unknown>[] };
    describe(doc.id, () => {
      if (doc.tests.length === 0) {
        it('has no examples upstream', () => {
          tally.skipped.push(`${doc.id}: no examples upstream`);
        });
      }
      doc.tests.forEach((test, i) => {
        const name = `${doc.id}#${i + 1}`;
        it(name, async function () {
          const missing = ((test.required as string[] | undefined) ?? []).filter(
            (p) => !PROCESS_IMPLEMENTATIONS.has(p),
          );
          if (missing.length > 0) {
            tally.skipped.push(`${name}: needs ${missing.join(', ')}, not implemented`);
            this.skip();
          }
          if (KNOWN_DIVERGENCES[name]) {
            tally.skipped.push(`${name}: ${KNOWN_DIVERGENCES[name]}`);
            this.skip();
          }
          let expected: unknown;
          let actual: unknown;
          let thrown: unknown;
          try {
            expected = 'returns' in test ? convert(test.returns, FOLDER) : undefined;
            try {
              actual = await runProcess(doc.id, test.arguments as Record<string, unknown>);
            } catch (error) {
              if (error instanceof MissingAsset) throw error;
              thrown = error;
            }
          } catch (error) {
            if (!(error instanceof MissingAsset)) throw error;
            tally.skipped.push(`${name}: ${error.message}`);
            this.skip();
          }
          tally.applicable++;
          const throws = test.throws as string | boolean | undefined;
          if (thrown !== undefined) {
            if (throws === undefined) throw thrown;
            if (typeof throws === 'string') {
              assert.ok(thrown instanceof OpenEoError, `${name}: ${String(thrown)}`);
              assert.equal(thrown.openEoCode, throws, `${name}: exception`);
            }
          } else if ('returns' in test) {
            assertSame(actual, expected, typeof test.delta === 'number' ? test.delta : 1e-10, name);
          } else {
            assert.fail(`${name}: expected ${String(throws)} to be thrown, got ${String(actual)}`);
          }
          tally.passed++;
        });
      });
    });
  }
});
