import { fail, pass, type Check } from './check.js';
import type { StepType } from './step-types/index.js';

export type { StepType };

/**
 * Job plans (docs/protocol.md §2.2 rule 1): a request's steps resolved into a topological order and into levels
 * of steps that may run in parallel. The plan is computed once, at request entry, before any
 * compute is dispatched; workflows replay it, so it must be deterministic (no Map iteration order
 * surprises, no randomness): ties always keep request order.
 */
export interface PlanStep {
  id: string;
  type: StepType;
  /** One step id, or a list of ids (fan-in, docs/protocol.md §2.2 rule 2). */
  depends_on?: string | readonly string[] | undefined;
}

export interface JobPlan {
  /** A topological order: every step comes after its dependency; otherwise request order. */
  order: string[];
  /** Steps grouped so every dependency sits in an earlier level; one level may run in parallel. */
  levels: string[][];
}

/** The ids a step depends on, in the order it lists them (a single id is a list of one). */
export const dependenciesOf = (step: Pick<PlanStep, 'depends_on'>): readonly string[] =>
  step.depends_on === undefined ? [] : typeof step.depends_on === 'string' ? [step.depends_on] : step.depends_on;

export function planJob(steps: readonly PlanStep[]): Check<JobPlan> {
  if (steps.length === 0) return fail('invalid_request', 'steps must contain at least one step');

  const indexById = new Map<string, number>();
  for (const [i, step] of steps.entries()) {
    if (indexById.has(step.id)) return fail('invalid_request', `duplicate step id ${JSON.stringify(step.id)}`);
    indexById.set(step.id, i);
  }

  // Edges as request indices: deps[i] are the steps i waits for, dependents[i] the steps waiting for i.
  const deps: number[][] = [];
  const dependents: number[][] = steps.map(() => []);
  for (const [i, step] of steps.entries()) {
    const own: number[] = [];
    for (const depId of dependenciesOf(step)) {
      if (own.includes(indexById.get(depId) ?? -1)) {
        return fail(
          'invalid_request',
          `step ${JSON.stringify(step.id)} lists ${JSON.stringify(depId)} twice in depends_on`,
        );
      }
      const d = indexById.get(depId);
      if (d === undefined) {
        return fail(
          'invalid_request',
          `step ${JSON.stringify(step.id)} depends on unknown step ${JSON.stringify(depId)}`,
        );
      }
      own.push(d);
      dependents[d]!.push(i);
    }
    deps.push(own);
  }

  // Kahn's algorithm; the ready set is a min-heap on request index, so ties keep request order.
  const pending = deps.map((own) => own.length);
  const ready = new MinHeap();
  pending.forEach((count, i) => {
    if (count === 0) ready.push(i);
  });
  const order: number[] = [];
  const level: number[] = steps.map(() => 0);
  for (let i = ready.pop(); i !== undefined; i = ready.pop()) {
    order.push(i);
    for (const d of deps[i]!) level[i] = Math.max(level[i]!, level[d]! + 1);
    for (const next of dependents[i]!) {
      if (--pending[next]! === 0) ready.push(next);
    }
  }

  if (order.length < steps.length) {
    const cycle = findCycle(pending, deps);
    const names = [...cycle, cycle[0]!].map((i) => steps[i]!.id);
    return fail('cyclic_dependency', `steps form a cycle: ${names.join(' -> ')}`);
  }

  const levels: string[][] = [];
  // Filling buckets in request order keeps each level in request order.
  for (const [i, step] of steps.entries()) (levels[level[i]!] ??= []).push(step.id);
  return pass({ order: order.map((i) => steps[i]!.id), levels });
}

/**
 * After Kahn's algorithm stops, every unprocessed step still waits for an unprocessed dependency, so
 * walking those dependencies from any of them must enter a cycle. Returns the cycle in dependency
 * order (each step feeds the next), starting at its earliest step in request order.
 */
function findCycle(pending: readonly number[], deps: readonly number[][]): number[] {
  const stuck = (i: number): boolean => pending[i]! > 0;
  const start = pending.findIndex((_, i) => stuck(i));
  const seenAt = new Map<number, number>();
  const path: number[] = [];
  let at = start;
  while (!seenAt.has(at)) {
    seenAt.set(at, path.length);
    path.push(at);
    at = deps[at]!.find(stuck)!;
  }
  const cycle = path.slice(seenAt.get(at)).reverse();
  const first = cycle.indexOf(cycle.reduce((a, b) => Math.min(a, b)));
  return [...cycle.slice(first), ...cycle.slice(0, first)];
}

/** A binary min-heap of step indices; iterative, so long chains cannot overflow the stack. */
class MinHeap {
  private readonly items: number[] = [];

  push(value: number): void {
    const items = this.items;
    let i = items.push(value) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (items[parent]! <= value) break;
      items[i] = items[parent]!;
      i = parent;
    }
    items[i] = value;
  }

  pop(): number | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= items.length) break;
      const right = left + 1;
      const child = right < items.length && items[right]! < items[left]! ? right : left;
      if (items[child]! >= last) break;
      items[i] = items[child]!;
      i = child;
    }
    items[i] = last;
    return top;
  }
}
