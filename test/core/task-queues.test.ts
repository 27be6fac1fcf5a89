import assert from 'node:assert/strict';
import { cellToChildren, cellToParent, getResolution, gridDisk } from 'h3-js';
import {
  DEFAULT_QUEUE_NAMING,
  DEFAULT_QUEUE_PREFIX,
  DEFAULT_ROUTING_RESOLUTION,
  backboneQueue,
  gatewayQueue,
  jobQueue,
  routingCell,
  stepQueue,
  workerQueue,
  type QueueNaming,
} from '../../core/task-queues.js';
import { TOOL_IDS } from '../../core/tool-registry.js';

const ROME = '861e8050fffffff'; // resolution 6
const ROME_ROUTING = '851e8053fffffff'; // its resolution-5 parent
const naming = DEFAULT_QUEUE_NAMING;

/** Every subset of `items`, in a fixed order. */
function subsets<T>(items: readonly T[]): T[][] {
  const all: T[][] = [];
  for (let mask = 0; mask < 1 << items.length; mask++) all.push(items.filter((_, i) => mask & (1 << i)));
  return all;
}

describe('task queues (docs/protocol.md §1.4)', () => {
  it('routes by resolution 5 under the geofabric prefix by default', () => {
    assert.equal(DEFAULT_QUEUE_PREFIX, 'geofabric');
    assert.equal(DEFAULT_ROUTING_RESOLUTION, 5);
    assert.deepEqual(DEFAULT_QUEUE_NAMING, { prefix: 'geofabric', routingResolution: 5 });
  });

  it('names the job, gateway and backbone queues under the prefix', () => {
    const test: QueueNaming = { prefix: 'test-run-7', routingResolution: 5 };
    assert.equal(jobQueue(test), 'test-run-7/jobs');
    assert.equal(gatewayQueue(test), 'test-run-7/gateway');
    assert.equal(backboneQueue(test), 'test-run-7/backbone');
  });

  describe('routing cell', () => {
    it('routes a finer cell by its parent at the routing resolution', () => {
      assert.equal(getResolution(ROME), 6);
      assert.equal(routingCell(ROME, naming), ROME_ROUTING);
      assert.equal(routingCell(ROME, naming), cellToParent(ROME, 5));
    });

    it('routes a much finer cell by the same parent', () => {
      const street = cellToChildren(ROME, 12)[17]!;
      assert.equal(routingCell(street, naming), ROME_ROUTING);
    });

    it('routes a cell at or coarser than the routing resolution by itself', () => {
      assert.equal(routingCell(ROME_ROUTING, naming), ROME_ROUTING);
      const coarse = cellToParent(ROME, 3);
      assert.equal(routingCell(coarse, naming), coarse);
    });

    it('follows the configured routing resolution', () => {
      const fine: QueueNaming = { prefix: 'geofabric', routingResolution: 7 };
      assert.equal(routingCell(ROME, fine), ROME);
      const street = cellToChildren(ROME, 9)[0]!;
      assert.equal(routingCell(street, fine), cellToParent(street, 7));
    });
  });

  describe('step queue', () => {
    it('names the routing cell and the tools, e.g. geofabric/851e8053fffffff/web-search', () => {
      assert.equal(stepQueue(ROME, ['web-search'], naming), 'geofabric/851e8053fffffff/web-search');
    });

    it('uses the base queue of the routing cell for a step needing no tools', () => {
      assert.equal(stepQueue(ROME, [], naming), 'geofabric/851e8053fffffff');
    });

    it('sorts and deduplicates the tools, so one tool set names one queue', () => {
      const expected = 'geofabric/851e8053fffffff/file-ops+python-repl+web-search';
      assert.equal(stepQueue(ROME, ['web-search', 'file-ops', 'python-repl'], naming), expected);
      assert.equal(stepQueue(ROME, ['python-repl', 'web-search', 'file-ops', 'web-search'], naming), expected);
    });
  });

  describe('worker queue', () => {
    it('is one queue per worker, that of its whole tool set, however many tools it has', () => {
      assert.equal(workerQueue(ROME, [], naming), 'geofabric/851e8053fffffff');
      assert.equal(
        workerQueue(ROME, [...TOOL_IDS].reverse(), naming),
        stepQueue(ROME, [...TOOL_IDS], naming),
        'all five registry tools: still one queue',
      );
    });

    it('ignores unknown and repeated tools', () => {
      assert.equal(
        workerQueue(ROME, ['web-search', 'teleport', 'web-search'], naming),
        'geofabric/851e8053fffffff/web-search',
      );
    });

    it('is shared by the workers of one routing cell with the same tools, whatever their order', () => {
      // Two cells of one routing cell.
      const [a, b] = [cellToChildren(ROME_ROUTING, 9)[0]!, cellToChildren(ROME_ROUTING, 9).at(-1)!];
      for (const tools of subsets(TOOL_IDS)) {
        assert.equal(workerQueue(a, tools, naming), workerQueue(b, [...tools].reverse(), naming), `[${tools}]`);
      }
    });

    it('never offers a step to a worker of another routing cell', () => {
      const neighbour = gridDisk(ROME_ROUTING, 1).find((c) => c !== ROME_ROUTING)!;
      for (const tools of subsets(TOOL_IDS)) {
        assert.notEqual(workerQueue(neighbour, tools, naming), workerQueue(ROME, tools, naming), `[${tools}]`);
      }
    });

    it('never offers a step to a worker of another deployment prefix', () => {
      const other: QueueNaming = { prefix: 'geofabric-staging', routingResolution: 5 };
      assert.notEqual(workerQueue(ROME, [], other), workerQueue(ROME, [], naming));
      assert.notEqual(workerQueue(ROME, ['web-search'], other), workerQueue(ROME, ['web-search'], naming));
    });
  });
});
