/**
 * core/openeo/graph.ts: what a process graph must be before it runs (docs/protocol.md §16.5) and how it is
 * evaluated (each node once, callbacks with their own parameters).
 */
import assert from 'node:assert/strict';
import { DEFINITIONS_BY_ID } from '../../api/openeo/process-definitions.js';
import { makeCube, type Cube } from '../../core/openeo/cube.js';
import { OpenEoError } from '../../core/openeo/errors.js';
import { GRAPH_LIMITS, checkProcessGraph, evaluateGraph, type Registry } from '../../core/openeo/graph.js';
import { PROCESS_IMPLEMENTATIONS, type OpenEoEnv } from '../../core/openeo/processes.js';

const registry: Registry<OpenEoEnv> = { definitions: DEFINITIONS_BY_ID, implementations: PROCESS_IMPLEMENTATIONS };
const env: OpenEoEnv = { loadCollection: () => Promise.reject(new Error('no collection here')) };

const refused = (graph: unknown, code: string, message?: RegExp) =>
  assert.throws(
    () => checkProcessGraph(graph, registry),
    (error: unknown) =>
      error instanceof OpenEoError &&
      error.openEoCode === code &&
      (message === undefined || message.test(error.message)),
  );

const add = (x: unknown, y: unknown, result = false) => ({
  process_id: 'add',
  arguments: { x, y },
  ...(result ? { result } : {}),
});

describe('openEO process graphs', () => {
  it('evaluates the result node from the nodes it depends on', async () => {
    const graph = checkProcessGraph(
      { a: add(1, 2), b: add({ from_node: 'a' }, { from_node: 'a' }), c: add({ from_node: 'b' }, 10, true) },
      registry,
    );
    assert.equal(await evaluateGraph(graph, registry, env), 16);
  });

  it('resolves references inside arrays', async () => {
    const graph = checkProcessGraph(
      { r: { process_id: 'mean', arguments: { data: [1, { from_node: 'x' }, 3] }, result: true }, x: add(1, 1) },
      registry,
    );
    assert.equal(await evaluateGraph(graph, registry, env), 2);
  });

  it('runs a callback once over the whole cube, with its own data and the context it is given', async () => {
    const cube = makeCube(
      [
        { name: 't', type: 'temporal', labels: ['2026-02-05T10:00:00Z', '2026-02-12T10:00:00Z'] },
        { name: 'x', type: 'spatial', axis: 'x', labels: [0.5, 1.5, 2.5], crs: 4326 },
      ],
      Float64Array.from([1, 2, NaN, 3, 4, 5]),
    );
    let calls = 0;
    const counting: Registry<OpenEoEnv> = {
      definitions: registry.definitions,
      implementations: new Map([
        ...registry.implementations,
        [
          'max',
          (args: Record<string, unknown>, e: OpenEoEnv) => {
            calls++;
            return registry.implementations.get('max')!(args, e);
          },
        ],
      ]),
    };
    const reduce = checkProcessGraph(
      {
        r: {
          process_id: 'reduce_dimension',
          arguments: {
            data: { from_parameter: 'cube' },
            dimension: 't',
            context: 10,
            reducer: {
              process_graph: {
                m: { process_id: 'max', arguments: { data: { from_parameter: 'data' } } },
                plus: {
                  process_id: 'add',
                  arguments: { x: { from_node: 'm' }, y: { from_parameter: 'context' } },
                  result: true,
                },
              },
            },
          },
          result: true,
        },
      },
      counting,
    );
    const out = (await evaluateGraph(reduce, counting, env, { cube })) as Cube;
    assert.equal(calls, 1, 'one call for all three pixels');
    assert.deepEqual(
      out.dims.map((d) => d.name),
      ['x'],
    );
    assert.deepEqual([...out.data], [13, 14, 15]);
  });

  it('refuses a graph without exactly one result node, with a dangling reference, or with a cycle', () => {
    refused({ a: add(1, 2), b: add(1, 2) }, 'ProcessGraphInvalid', /exactly one result node/);
    refused({ a: add(1, 2, true), b: add(1, 2, true) }, 'ProcessGraphInvalid', /exactly one result node/);
    refused({ a: add({ from_node: 'nowhere' }, 2, true) }, 'ProcessGraphInvalid', /nowhere/);
    refused({ a: add({ from_node: 'b' }, 1, true), b: add({ from_node: 'a' }, 1) }, 'ProcessGraphInvalid', /cycle/);
    refused({}, 'ProcessGraphInvalid');
    refused([], 'ProcessGraphInvalid');
    refused({ a: { arguments: {}, result: true } }, 'ProcessGraphInvalid', /process_id/);
  });

  it('refuses processes not implemented (naming them), other namespaces, unknown and missing parameters', () => {
    refused(
      { a: { process_id: 'sar_backscatter', arguments: {}, result: true } },
      'ProcessUnsupported',
      /sar_backscatter/,
    );
    refused({ a: { process_id: '__proto__', arguments: {}, result: true } }, 'ProcessUnsupported');
    refused({ a: { ...add(1, 2, true), namespace: 'vito' } }, 'ProcessUnsupported', /vito/);
    refused(
      { a: { process_id: 'add', arguments: { x: 1, y: 2, z: 3 }, result: true } },
      'ProcessParameterUnsupported',
      /'z'/,
    );
    refused({ a: { process_id: 'add', arguments: { x: 1 }, result: true } }, 'ProcessParameterRequired', /'y'/);
  });

  it('checks callbacks like graphs, and bounds nodes and nesting', () => {
    const reduce = (reducer: unknown) => ({
      a: {
        process_id: 'reduce_dimension',
        arguments: { data: 1, dimension: 't', reducer: { process_graph: reducer } },
        result: true,
      },
    });
    refused(reduce({ m: { process_id: 'quantiles', arguments: {}, result: true } }), 'ProcessUnsupported', /quantiles/);
    refused(reduce({ m: { process_id: 'mean', arguments: { data: 1 } } }), 'ProcessGraphInvalid', /result node/);
    const many = Object.fromEntries(
      Array.from({ length: GRAPH_LIMITS.maxNodes + 1 }, (_, i) => [`n${i}`, add(1, 2, i === 0)]),
    );
    refused(many, 'ProcessGraphInvalid', /nodes/);
    let nested: unknown = { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } };
    for (let i = 0; i <= GRAPH_LIMITS.maxDepth; i++) nested = reduce(nested);
    refused(nested, 'ProcessGraphInvalid', /nest/);
  });
});
