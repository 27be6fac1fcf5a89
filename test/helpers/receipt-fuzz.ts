/**
 * Seeded mutations of job receipts (docs/protocol.md §15) for the differential fuzz of the four receipt verifiers
 * (core/receipt.ts, clients/typescript, dashboard/receipt-verify.js, clients/python): each mutation deletes,
 * nulls, retypes, duplicates, swaps or edits one value at a random JSON path (a number edge case, a hex string
 * with a character changed, an extra key, a key removed), so the verifiers meet what a careless or hostile sender
 * may hand them. The same seed always gives the same mutations: a disagreement found once is found again.
 */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Obj = { [key: string]: Json };
type Path = (string | number)[];

export interface FuzzOptions {
  sealer_pk?: string;
  allow_pending?: boolean;
}

export interface FuzzCase {
  /** What was done, e.g. `remove /records/3/seal`. */
  name: string;
  base: string;
  receipt: Json;
  options: FuzzOptions;
}

/** mulberry32: a small seeded generator, the same sequence on every platform. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Every path into `value`, the root excluded. */
function pathsOf(value: Json, at: Path = []): Path[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => [[...at, i], ...pathsOf(v, [...at, i])]);
  if (isObj(value)) return Object.entries(value).flatMap(([k, v]) => [[...at, k], ...pathsOf(v, [...at, k])]);
  return [];
}

/**
 * Paths inside signed or hashed content (a record, a seal, the request body, a certificate's signed fields): a
 * change there fails a signature in every verifier alike, so half the mutations go elsewhere, where the shapes
 * are only the verifiers' to judge.
 */
function isSigned(path: Path): boolean {
  const [a, , c, d] = path;
  if (a === 'records') return c === 'record' || c === 'seal';
  if (a === 'seal_chains') return c === 'seals' && d !== undefined;
  // A seal log head's fields (docs/protocol.md §15.4); its proofs are not signed.
  if (a === 'seal_heads')
    return (c === 'head' && d !== undefined) || (c === 'anchored' && d === 'head' && path[4] !== undefined);
  if (a === 'request') return path[1] === 'body' || (path[1] === 'delegation_chain' && path.length > 3);
  return false;
}

const pointer = (path: Path) => path.map((p) => `/${String(p).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');

function parentOf(root: Json, path: Path): Json {
  let node = root;
  for (const key of path.slice(0, -1)) node = (node as Obj)[key as string] as Json;
  return node;
}

const getAt = (root: Json, path: Path): Json => (parentOf(root, path) as Obj)[path.at(-1) as string] as Json;

function setAt(root: Json, path: Path, value: Json): void {
  (parentOf(root, path) as Obj)[path.at(-1) as string] = value;
}

function removeAt(root: Json, path: Path): void {
  const parent = parentOf(root, path);
  const last = path.at(-1)!;
  if (Array.isArray(parent)) parent.splice(Number(last), 1);
  else delete (parent as Obj)[last as string];
}

const OTHER_VALUES: Json[] = [0, 1, -1, 2.5, '', 'x', true, false, [], {}, ['x'], { x: 1 }, null];
const NUMBERS: number[] = [
  0,
  1,
  -1,
  0.5,
  0.1 + 0.2,
  1e21,
  1e308,
  -1e308,
  5e-324,
  2 ** 31,
  2 ** 53 - 1,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 53),
];
const EXTRA_KEYS = ['extra', 'x', 'custodian_pk', 'constraints', 'batch', 'device_signature', 'record', 'seal', 'note'];

/** A string with one edit: hex stays hex where the edit allows, so shape checks pass and hashes must catch it. */
function editString(text: string, random: () => number, strings: readonly string[]): string {
  const hexDigit = '0123456789abcdef';
  switch (Math.floor(random() * 7)) {
    case 0: {
      const i = Math.floor(random() * Math.max(1, text.length));
      const next = hexDigit[(hexDigit.indexOf(text[i] ?? '0') + 1 + Math.floor(random() * 15)) % 16]!;
      return text.slice(0, i) + next + text.slice(i + 1);
    }
    case 1:
      return text.toUpperCase();
    case 2:
      return text.slice(0, -1);
    case 3:
      return `${text}0`;
    case 4:
      return ` ${text}`;
    case 5:
      // Another string of the same length from the receipt (another key, hash or id), else reversed.
      return (
        strings.filter((s) => s.length === text.length && s !== text)[Math.floor(random() * 8)] ??
        [...text].reverse().join('')
      );
    default:
      return text.length > 0 ? text.slice(1) + text[0] : 'a';
  }
}

/** One mutation of `receipt` in place; returns its description. */
function mutate(receipt: Json, random: () => number): string {
  const all = pathsOf(receipt);
  const unsigned = all.filter((p) => !isSigned(p));
  const pool = random() < 0.5 && unsigned.length > 0 ? unsigned : all;
  const path = pool[Math.floor(random() * pool.length)]!;
  const value = getAt(receipt, path);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const at = pointer(path);
  switch (Math.floor(random() * 9)) {
    case 0:
      removeAt(receipt, path);
      return `remove ${at}`;
    case 1:
      setAt(receipt, path, null);
      return `null ${at}`;
    case 2: {
      const other = pick(
        OTHER_VALUES.filter((v) => typeof v !== typeof value || Array.isArray(v) !== Array.isArray(value)),
      );
      setAt(receipt, path, structuredClone(other));
      return `retype ${at} = ${JSON.stringify(other)}`;
    }
    case 3: {
      const n = typeof value === 'number' ? pick([...NUMBERS, value + 1, value - 1, value * 2, -value]) : pick(NUMBERS);
      setAt(receipt, path, n);
      return `number ${at} = ${n}`;
    }
    case 4: {
      const strings = all.map((p) => getAt(receipt, p)).filter((s): s is string => typeof s === 'string');
      const edited = editString(typeof value === 'string' ? value : pick(strings), random, strings);
      setAt(receipt, path, edited);
      return `string ${at} = ${JSON.stringify(edited).slice(0, 40)}`;
    }
    case 5: {
      // An extra key on the nearest object.
      const objectPath = isObj(value) ? path : path.slice(0, -1);
      const target = objectPath.length === 0 ? receipt : getAt(receipt, objectPath);
      if (!isObj(target)) return mutate(receipt, random);
      const key = pick(EXTRA_KEYS.filter((k) => !(k in target)));
      target[key] = structuredClone(pick(OTHER_VALUES));
      return `extra ${pointer([...objectPath, key])} = ${JSON.stringify(target[key])}`;
    }
    case 6: {
      // The same key's value from elsewhere in the receipt (another entry's seal, another step's id …).
      const key = path.at(-1);
      const donors = all.filter((p) => p.at(-1) === key && pointer(p) !== at);
      if (donors.length === 0) return mutate(receipt, random);
      const donor = pick(donors);
      setAt(receipt, path, structuredClone(getAt(receipt, donor)));
      return `copy ${pointer(donor)} to ${at}`;
    }
    case 7: {
      // An array element twice, or two swapped.
      const arrayPath = Array.isArray(value) ? path : path.slice(0, -1);
      const array = arrayPath.length === 0 ? receipt : getAt(receipt, arrayPath);
      if (!Array.isArray(array) || array.length === 0) return mutate(receipt, random);
      const i = Math.floor(random() * array.length);
      const j = Math.floor(random() * array.length);
      if (random() < 0.5) {
        array.splice(j, 0, structuredClone(array[i]!));
        return `duplicate ${pointer([...arrayPath, i])} at ${j}`;
      }
      [array[i], array[j]] = [array[j]!, array[i]!];
      return `swap ${pointer([...arrayPath, i])} and ${j}`;
    }
    default: {
      // A key removed from the nearest object (the absent-versus-null cases).
      const objectPath = isObj(value) ? path : path.slice(0, -1);
      const target = objectPath.length === 0 ? receipt : getAt(receipt, objectPath);
      if (!isObj(target) || Object.keys(target).length === 0) return mutate(receipt, random);
      const key = pick(Object.keys(target));
      delete target[key];
      return `remove ${pointer([...objectPath, key])}`;
    }
  }
}

/**
 * `count` mutated receipts from `bases` (name → receipt), the same for the same seed. Each receipt is a JSON round
 * trip (what a verifier reading JSON text sees: no -0, no undefined); options now and then allow pending receipts
 * or pin a node key (`nodePk`, or another key).
 */
export function receiptMutations(
  bases: Readonly<Record<string, Json>>,
  seed: number,
  count: number,
  nodePk: string,
): FuzzCase[] {
  const random = seededRandom(seed);
  const names = Object.keys(bases).sort();
  const cases: FuzzCase[] = [];
  for (let n = 0; n < count; n++) {
    const base = names[Math.floor(random() * names.length)]!;
    const receipt = structuredClone(bases[base]!) as Json;
    const steps = [mutate(receipt, random)];
    if (random() < 0.15) steps.push(mutate(receipt, random));
    const roll = random();
    const options: FuzzOptions =
      roll < 0.1
        ? { allow_pending: true }
        : roll < 0.15
          ? { sealer_pk: nodePk }
          : roll < 0.18
            ? { sealer_pk: '0'.repeat(63) + '1' }
            : {};
    cases.push({
      name: `${base}: ${steps.join('; ')}`,
      base,
      receipt: JSON.parse(JSON.stringify(receipt)) as Json,
      options,
    });
  }
  return cases;
}
