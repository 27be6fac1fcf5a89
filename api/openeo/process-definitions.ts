/**
 * The official definitions (api/openeo/processes/, Apache 2.0) of the processes core/openeo/processes.ts implements:
 * `GET /openeo/1.2/processes` serves them as they are, and the evaluator reads each one's parameters and defaults.
 * A process is listed here only when it is implemented, and every implemented process is listed
 * (test/api/openeo-discovery.test.ts holds both lists equal).
 */
import type { ProcessDefinition } from '../../core/openeo/graph.js';
import loadCollection from './processes/load_collection.json' with { type: 'json' };
import saveResult from './processes/save_result.json' with { type: 'json' };
import filterBbox from './processes/filter_bbox.json' with { type: 'json' };
import filterTemporal from './processes/filter_temporal.json' with { type: 'json' };
import filterBands from './processes/filter_bands.json' with { type: 'json' };
import reduceDimension from './processes/reduce_dimension.json' with { type: 'json' };
import apply from './processes/apply.json' with { type: 'json' };
import ndvi from './processes/ndvi.json' with { type: 'json' };
import normalizedDifference from './processes/normalized_difference.json' with { type: 'json' };
import mask from './processes/mask.json' with { type: 'json' };
import aggregateSpatial from './processes/aggregate_spatial.json' with { type: 'json' };
import arrayElement from './processes/array_element.json' with { type: 'json' };
import mean from './processes/mean.json' with { type: 'json' };
import median from './processes/median.json' with { type: 'json' };
import min from './processes/min.json' with { type: 'json' };
import max from './processes/max.json' with { type: 'json' };
import add from './processes/add.json' with { type: 'json' };
import subtract from './processes/subtract.json' with { type: 'json' };
import multiply from './processes/multiply.json' with { type: 'json' };
import divide from './processes/divide.json' with { type: 'json' };
import linearScaleRange from './processes/linear_scale_range.json' with { type: 'json' };
import eq from './processes/eq.json' with { type: 'json' };
import neq from './processes/neq.json' with { type: 'json' };
import lt from './processes/lt.json' with { type: 'json' };
import lte from './processes/lte.json' with { type: 'json' };
import gt from './processes/gt.json' with { type: 'json' };
import gte from './processes/gte.json' with { type: 'json' };
import andProcess from './processes/and.json' with { type: 'json' };
import orProcess from './processes/or.json' with { type: 'json' };
import notProcess from './processes/not.json' with { type: 'json' };

/** The definitions in the order `GET /processes` lists them. */
export const PROCESS_DEFINITIONS: readonly (ProcessDefinition & Record<string, unknown>)[] = [
  loadCollection,
  saveResult,
  filterBbox,
  filterTemporal,
  filterBands,
  reduceDimension,
  apply,
  ndvi,
  normalizedDifference,
  mask,
  aggregateSpatial,
  arrayElement,
  mean,
  median,
  min,
  max,
  add,
  subtract,
  multiply,
  divide,
  linearScaleRange,
  eq,
  neq,
  lt,
  lte,
  gt,
  gte,
  andProcess,
  orProcess,
  notProcess,
];

export const DEFINITIONS_BY_ID: ReadonlyMap<string, ProcessDefinition> = new Map(
  PROCESS_DEFINITIONS.map((d) => [d.id, d]),
);
