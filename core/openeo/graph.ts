/**
 * openEO process graphs (docs/protocol.md §16): checking a graph before anything runs, and evaluating it. A graph
 * is an object of nodes `{ process_id, arguments, result? }`; an argument refers to another node's value
 * (`{ from_node }`), to a parameter of the enclosing process (`{ from_parameter }`), or is a callback
 * (`{ process_graph }`) that a process runs with parameters of its own (a reducer's `data`, `apply`'s `x`). The
 * processes are given (core/openeo/processes.ts); anything they read from outside (a collection) comes through
 * the `env` they receive, so this stays pure.
 */
import { OpenEoError } from './errors.js';

/** The parts of an official process definition the evaluator reads (the `GET /processes` entry). */
export interface ProcessDefinition {
  id: string;
  parameters: readonly { name: string; optional?: boolean; default?: unknown }[];
}

export interface ProcessNode {
  process_id: string;
  namespace?: string | null;
  arguments: Record<string, unknown>;
  result?: boolean;
  description?: string | null;
}
export type ProcessGraph = Record<string, ProcessNode>;

/** A callback argument, ready to run with the parameters its process gives it. */
export class Callback {
  constructor(
    readonly graph: ProcessGraph,
    private readonly run: (parameters: Record<string, unknown>) => Promise<unknown>,
  ) {}
  call(parameters: Record<string, unknown>): Promise<unknown> {
    return this.run(parameters);
  }
  /** The single process of a one-node callback (e.g. `mean` as a reducer), for processes that read it natively. */
  get single(): ProcessNode | undefined {
    const nodes = Object.values(this.graph);
    return nodes.length === 1 ? nodes[0] : undefined;
  }
}

/** What a process implementation gets: its arguments (defaults filled in) and the evaluation's environment. */
export type ProcessImpl<Env> = (args: Record<string, unknown>, env: Env) => unknown;

export interface Registry<Env> {
  definitions: ReadonlyMap<string, ProcessDefinition>;
  implementations: ReadonlyMap<string, ProcessImpl<Env>>;
}

/** Bounds on what a graph may be, checked before it runs. */
export const GRAPH_LIMITS = { maxNodes: 256, maxDepth: 8, maxArgumentDepth: 32 } as const;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const own = (object: object, key: string): boolean => Object.prototype.hasOwnProperty.call(object, key);

const invalid = (message: string) => new OpenEoError('ProcessGraphInvalid', message);

/** A `{ from_node }`, `{ from_parameter }` or `{ process_graph }` object, recognised by its only key. */
function referenceOf(value: Record<string, unknown>): 'from_node' | 'from_parameter' | 'process_graph' | null {
  if (own(value, 'from_node') && typeof value.from_node === 'string') return 'from_node';
  if (own(value, 'from_parameter') && typeof value.from_parameter === 'string') return 'from_parameter';
  if (own(value, 'process_graph') && isRecord(value.process_graph)) return 'process_graph';
  return null;
}

/** The result node's id of a graph whose shape was checked. */
function resultNode(graph: ProcessGraph): string {
  return Object.keys(graph).find((id) => graph[id]!.result === true)!;
}

/**
 * Checks a graph and its callbacks before it runs: the node shapes, exactly one result node per graph, `from_node`
 * references to nodes of the same graph and no cycle, processes this back-end implements (`ProcessUnsupported`
 * naming the first that is not), their required parameters (`ProcessParameterRequired`) and no unknown ones
 * (`ProcessParameterUnsupported`), and the bounds of GRAPH_LIMITS. Returns the graph, typed.
 */
export function checkProcessGraph<Env>(graph: unknown, registry: Registry<Env>): ProcessGraph {
  let nodes = 0;
  const visit = (g: unknown, depth: number, where: string): ProcessGraph => {
    if (depth > GRAPH_LIMITS.maxDepth) throw invalid(`callbacks nest deeper than ${GRAPH_LIMITS.maxDepth} levels`);
    if (!isRecord(g) || Object.keys(g).length === 0) throw invalid(`${where} must be an object of process nodes`);
    let results = 0;
    for (const [id, node] of Object.entries(g)) {
      if (++nodes > GRAPH_LIMITS.maxNodes)
        throw invalid(`the process graph has more than ${GRAPH_LIMITS.maxNodes} nodes`);
      if (!isRecord(node) || typeof node.process_id !== 'string') {
        throw invalid(`node "${id}" of ${where} has no process_id`);
      }
      if (node.arguments !== undefined && !isRecord(node.arguments)) {
        throw invalid(`the arguments of node "${id}" must be an object`);
      }
      if (node.result === true) results++;
      const namespace = node.namespace;
      if (namespace !== undefined && namespace !== null && namespace !== 'backend') {
        throw new OpenEoError(
          'ProcessUnsupported',
          `Process with identifier '${node.process_id}' is not available in namespace '${String(namespace)}'.`,
        );
      }
      const definition = registry.definitions.get(node.process_id);
      if (definition === undefined || !registry.implementations.has(node.process_id)) {
        throw new OpenEoError(
          'ProcessUnsupported',
          `Process with identifier '${node.process_id}' is not available in namespace 'backend'.`,
        );
      }
      const args = (node.arguments ?? {}) as Record<string, unknown>;
      const names = new Set(definition.parameters.map((p) => p.name));
      for (const name of Object.keys(args)) {
        if (!names.has(name)) {
          throw new OpenEoError(
            'ProcessParameterUnsupported',
            `Process '${node.process_id}' does not support parameter '${name}'.`,
          );
        }
      }
      for (const p of definition.parameters) {
        if (p.optional !== true && !own(args, p.name)) {
          throw new OpenEoError(
            'ProcessParameterRequired',
            `Process '${node.process_id}' parameter '${p.name}' is required.`,
          );
        }
      }
      walkArguments(args, 0, (ref, value) => {
        if (ref === 'from_node' && !own(g, value.from_node as string)) {
          throw invalid(`node "${id}" refers to node "${String(value.from_node)}", which ${where} does not have`);
        }
        if (ref === 'process_graph') visit(value.process_graph, depth + 1, `the callback of node "${id}"`);
      });
    }
    if (results !== 1) throw invalid(`${where} must have exactly one result node (it has ${results})`);
    checkAcyclic(g as ProcessGraph);
    return g as ProcessGraph;
  };
  return visit(graph, 0, 'the process graph');
}

/** Calls `found` for each reference in an argument value (not inside callbacks' own graphs). */
function walkArguments(
  value: unknown,
  depth: number,
  found: (ref: 'from_node' | 'from_parameter' | 'process_graph', value: Record<string, unknown>) => void,
): void {
  if (depth > GRAPH_LIMITS.maxArgumentDepth) throw invalid('an argument nests too deep');
  if (Array.isArray(value)) {
    for (const item of value) walkArguments(item, depth + 1, found);
  } else if (isRecord(value)) {
    const ref = referenceOf(value);
    if (ref !== null) return found(ref, value);
    for (const item of Object.values(value)) walkArguments(item, depth + 1, found);
  }
}

function checkAcyclic(graph: ProcessGraph): void {
  const state = new Map<string, 'open' | 'done'>();
  const visit = (id: string, path: string[]): void => {
    const seen = state.get(id);
    if (seen === 'done') return;
    if (seen === 'open') throw invalid(`the process graph has a cycle: ${[...path, id].join(' → ')}`);
    state.set(id, 'open');
    walkArguments(graph[id]!.arguments ?? {}, 0, (ref, value) => {
      if (ref === 'from_node') visit(value.from_node as string, [...path, id]);
    });
    state.set(id, 'done');
  };
  for (const id of Object.keys(graph)) visit(id, []);
}

/**
 * Evaluates a checked graph: the result node and what it depends on, each node once. `parameters` are the
 * enclosing process's (a callback's `data`, `context` …). Processes may be async.
 */
export async function evaluateGraph<Env>(
  graph: ProcessGraph,
  registry: Registry<Env>,
  env: Env,
  parameters: Record<string, unknown> = {},
): Promise<unknown> {
  const values = new Map<string, Promise<unknown>>();
  const resolve = (value: unknown): Promise<unknown> | unknown => {
    if (Array.isArray(value)) {
      const items = value.map(resolve);
      return items.some((i) => i instanceof Promise) ? Promise.all(items) : items;
    }
    if (!isRecord(value)) return value;
    const ref = referenceOf(value);
    if (ref === 'from_node') return node(value.from_node as string);
    if (ref === 'from_parameter') {
      const name = value.from_parameter as string;
      if (!own(parameters, name)) {
        throw new OpenEoError('ProcessParameterRequired', `the parameter "${name}" is not defined here`);
      }
      return parameters[name];
    }
    if (ref === 'process_graph') {
      const inner = value.process_graph as ProcessGraph;
      return new Callback(inner, (params) => evaluateGraph(inner, registry, env, params));
    }
    const entries = Object.entries(value).map(([k, v]) => [k, resolve(v)] as const);
    if (!entries.some(([, v]) => v instanceof Promise)) return Object.fromEntries(entries);
    return Promise.all(entries.map(async ([k, v]) => [k, await v] as const)).then((e) => Object.fromEntries(e));
  };
  const node = (id: string): Promise<unknown> => {
    let pending = values.get(id);
    if (pending === undefined) {
      pending = run(id);
      values.set(id, pending);
    }
    return pending;
  };
  const run = async (id: string): Promise<unknown> => {
    const spec = graph[id]!;
    const definition = registry.definitions.get(spec.process_id)!;
    const implementation = registry.implementations.get(spec.process_id)!;
    const args: Record<string, unknown> = {};
    for (const p of definition.parameters) {
      const given = spec.arguments ?? {};
      if (own(given, p.name)) args[p.name] = await resolve(given[p.name]);
      else if (own(p, 'default')) args[p.name] = p.default;
    }
    return implementation(args, env);
  };
  return node(resultNode(graph));
}
