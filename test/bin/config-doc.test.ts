import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ENV_DOCS, envSchema } from '../../bin/config.js';
import { DEV_ENV, renderConfigDoc } from '../../scripts/config-doc.js';

/** Every file under `dir` whose name ends in one of `exts`. */
function files(dir: string, exts: readonly string[]): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path, exts);
    return exts.some((ext) => name.endsWith(ext)) ? [path] : [];
  });
}

/** Upper-case names read from process.env (dotted or bracketed) in these files. */
function envReads(paths: readonly string[]): Map<string, string> {
  const found = new Map<string, string>();
  for (const path of paths) {
    const text = readFileSync(path, 'utf8');
    for (const m of text.matchAll(/process\.env(?:\.([A-Z][A-Z0-9_]*)|\[\s*['"]([A-Z][A-Z0-9_]*)['"]\s*\])/g)) {
      found.set((m[1] ?? m[2])!, path);
    }
  }
  return found;
}

describe('docs/configuration.md (scripts/config-doc.ts)', () => {
  const schemaNames = Object.keys(envSchema.shape).sort();

  it('documents every variable of the configuration schema, and nothing else', () => {
    assert.deepEqual(Object.keys(ENV_DOCS).sort(), schemaNames);
  });

  it('lists every variable the service code reads from process.env', () => {
    const serviceDirs = ['bin', 'api', 'core', 'store', 'activities', 'workflows', 'mcp'];
    const reads = envReads(serviceDirs.flatMap((dir) => files(dir, ['.ts', '.js'])));
    const missing = [...reads].filter(([name]) => !schemaNames.includes(name)).map(([n, p]) => `${n} (${p})`);
    assert.deepEqual(missing, [], 'add these to envSchema and ENV_DOCS in bin/config.ts');
  });

  it('lists every variable the benchmarks, tests and scripts read', () => {
    const reads = envReads([...files('bench', ['.ts']), ...files('test', ['.ts']), ...files('scripts', ['.ts'])]);
    for (const path of files('scripts', ['.sh'])) {
      for (const m of readFileSync(path, 'utf8').matchAll(/\$\{(GEOFABRIC_[A-Z0-9_]+)/g)) reads.set(m[1]!, path);
    }
    const known = new Set([...schemaNames, ...Object.keys(DEV_ENV)]);
    const missing = [...reads].filter(([name]) => !known.has(name)).map(([n, p]) => `${n} (${p})`);
    assert.deepEqual(missing, [], 'add these to DEV_ENV in scripts/config-doc.ts');
  });

  it('renders one table row per variable, with its default', async () => {
    const doc = await renderConfigDoc();
    for (const name of [...schemaNames, ...Object.keys(DEV_ENV)]) {
      assert.match(doc, new RegExp('^\\| `' + name + '` ', 'm'), name);
    }
    assert.match(doc, /^\| `PORT` +\| `8080` +\| integer 0–65,535 /m);
    assert.match(doc, /^\| `ORCHESTRATOR` +\| `embedded` +\| `embedded`, `temporal` /m);
  });
});
