/** The RFC 6902 subset the conformance vectors use (replace, add, remove), on a copy. */
export interface PatchOp {
  op: 'replace' | 'add' | 'remove';
  path: string;
  value?: unknown;
}

export function applyPatch<T>(document: T, patch: readonly PatchOp[]): T {
  const copy = structuredClone(document);
  for (const { op, path, value } of patch) {
    const keys = path
      .split('/')
      .slice(1)
      .map((k) => k.replaceAll('~1', '/').replaceAll('~0', '~'));
    const last = keys.pop();
    if (last === undefined) throw new RangeError('a patch cannot replace the whole document');
    let parent = copy as unknown as Record<string, unknown>;
    for (const key of keys) parent = parent[key] as Record<string, unknown>;
    if (op === 'remove') {
      if (Array.isArray(parent)) parent.splice(Number(last), 1);
      else delete parent[last];
    } else parent[last] = structuredClone(value);
  }
  return copy;
}
