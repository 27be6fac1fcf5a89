/**
 * Generates docs/configuration.md from the configuration schema (bin/config.ts envSchema and ENV_DOCS) and the
 * development knobs below, so the table cannot drift from what the code reads.
 *
 *   tsx scripts/config-doc.ts            print the document
 *   tsx scripts/config-doc.ts --write    write docs/configuration.md
 *   tsx scripts/config-doc.ts --check    exit 1 when docs/configuration.md differs from what would be written
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { z } from 'zod';
import { ENV_DOCS, ENV_SECTIONS, envSchema } from '../bin/config.js';

export const CONFIG_DOC_PATH = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'configuration.md');

/** Variables read by the benchmarks, the tests and the helper scripts: not service configuration. */
export const DEV_ENV: Record<string, { where: string; description: string }> = {
  BENCH_SECONDS: { where: '`npm run bench`', description: 'seconds per measurement (default 5)' },
  BENCH_GROWTH_SIZES: {
    where: '`npm run bench -- --growth`',
    description: 'comma-separated sizes of the cost curves (default 1000,10000,100000,1000000)',
  },
  BENCH_GROWTH_STORE_MIN: {
    where: '`npm run bench -- --growth`',
    description: 'smallest size for the store figures: append, seal, inclusion proof, recent pages (default 10000)',
  },
  BENCH_GROWTH_FUSION_MAX: {
    where: '`npm run bench -- --growth`',
    description: 'largest size the fusion is measured at (default 100000)',
  },
  BENCH_GROWTH_CHAIN_MAX: {
    where: '`npm run bench -- --growth`',
    description: 'largest size of the audit chain and seal chain figures (default 100000)',
  },
  OPENEO_PYTHON: {
    where: '`npm test` (test/api/openeo-python-client.test.ts)',
    description:
      'a Python with `openeo` and `rasterio` installed: the official openEO client runs against the gateway; unset, skipped (`.ci/run` sets it)',
  },
  RECEIPT_FUZZ_SEED: {
    where: '`npm test` (test/core/receipt-agreement.test.ts)',
    description: "seed of the receipt verifiers' differential fuzz (default the corpus seed)",
  },
  RECEIPT_FUZZ_COUNT: {
    where: '`npm test` (test/core/receipt-agreement.test.ts)',
    description: "mutations the receipt verifiers' differential fuzz makes (default 100)",
  },
  BENCH_ONLY: {
    where: '`npm run bench`',
    description: 'comma-separated subset: `gates,proofs,tiles,ndvi,chat,jobs,audit`',
  },
  BENCH_SEAL_RECORDS: {
    where: '`npm run bench`',
    description: 'records in the epoch the proof bench seals (default 1,000,000)',
  },
  BENCH_AUDIT_BLOCKS: {
    where: '`npm run bench`',
    description: 'blocks in the chain whose compliance report the audit bench computes (default 100,000)',
  },
  BENCH_PROFILE: {
    where: '`npm run bench`',
    description: 'CPU profiles of the gate, tile and chat bench servers into `/tmp/prof`',
  },
  BENCH_GATE_PROCESSES: {
    where: '`npm run bench`',
    description: 'set by the gate bench on its server: how many `node:cluster` workers serve (1, then 2)',
  },
  BENCH_PERF: {
    where: '`npm run bench`',
    description: 'file for a `perf record` of the gate bench server (CPU time, JavaScript frames named)',
  },
  BENCH_GATE_SERVER: {
    where: '`npm run bench`',
    description: 'another server script for the gate bench (an older checkout, to compare with)',
  },
  BENCH_JSON: {
    where: '`npm run bench`',
    description: 'file to write every figure to as JSON, with its unit and floor (same as `--json FILE`)',
  },
  BENCH_BODY_BYTES_PER_MINUTE: {
    where: '`npx tsx bench/health-under-attack.ts`',
    description: "the attacked gateway's body-byte budget per address (default 32 MiB; 0 turns it off)",
  },
  BENCH_LOAD_SECONDS: { where: '`npm run bench:load`', description: 'seconds per scenario (default 10)' },
  BENCH_LOAD_CONNECTIONS: { where: '`npm run bench:load`', description: 'concurrent connections (default 16)' },
  BENCH_LOAD_MIXED: { where: '`npm run bench:load`', description: '`1` adds a mixed scenario' },
  BENCH_LOAD_SYNC_RECORDS: {
    where: '`npm run bench:load`',
    description: 'records a worker node pushes through sync during the compute scenario (default 5,000)',
  },
  BENCH_TEMPORAL_JOBS: {
    where: '`npm run bench:temporal`',
    description: 'sequential jobs per latency figure (default 40)',
  },
  BENCH_TEMPORAL_ONLY: {
    where: '`npm run bench:temporal`',
    description: '`cell`: only the floor, the embedded runs and the cell worker (no backbone runs on Temporal)',
  },
  BENCH_CPU_PROF_DIR: {
    where: '`npm run bench:temporal`',
    description: 'a folder: each process of the run writes a CPU profile there when it exits (`node --cpu-prof`)',
  },
  BENCH_GATE_BARE: {
    where: '`npm run bench` (bench/gate-server.ts, set by bench/gates.ts)',
    description: '`1`: the gates floor, a bare Koa server that reads, parses, canonicalises and verifies the bodies',
  },
  BENCH_RECEIPT_DAYS: {
    where: '`npx tsx bench/receipt-year.ts`',
    description: 'comma-separated days of hourly seals to measure a receipt at (default 1,30,365,1095)',
  },
  BENCH_TEMPORAL_CONCURRENT_JOBS: {
    where: '`npm run bench:temporal`',
    description: 'jobs (and bare workflows) of the throughput figure at 16 concurrent clients (default 200)',
  },
  BENCH_LOAD_WEB_CONCURRENCY: {
    where: '`npm run bench:load`',
    description: 'gateway process counts to run in turn, e.g. `1,2`, then compared side by side (default `1`)',
  },
  BENCH_LOAD_KEEP: {
    where: '`npm run bench:load`',
    description: "`1` keeps the service's `DATA_DIR` after the run (a failed run always keeps it)",
  },
  FUZZ_RUNS: { where: '`npm test`', description: 'fast-check runs per fuzz property (`2000`: the long run)' },
  FUZZ_SEED: { where: '`npm test`', description: 'replay a fuzz failure with its seed' },
  REQUIRE_BROWSER: {
    where: '`npm test`',
    description: '`1`: a missing Chromium fails the dashboard browser test instead of skipping it (CI sets it)',
  },
  CHROMIUM_PATH: { where: '`npm test`', description: 'browser for the dashboard test (default `/usr/bin/chromium`)' },
  TEST_LOG: { where: '`npm test`', description: "pino level of the test gateways' logs (default `silent`)" },
  MCP_PYTHON: {
    where: '`npm run test:live`',
    description: 'a Python with the official `mcp` SDK (2.x): the live suite drives both MCP servers with it',
  },
  CI: {
    where: '`npm run test:live`',
    description: 'set by CI: a live suite whose prerequisite (`MCP_PYTHON`) is missing fails instead of skipping',
  },
  RECORD_FIXTURES: {
    where: '`npm run test:live`',
    description: '`1` re-records the Temporal history fixture the unit suite replays',
  },
  GEOFABRIC_ENGINES_DIR: {
    where: '`scripts/engines.sh`',
    description: 'where the Temporal and FerretDB binaries are built (default `~/.cache/geofabric-engines`)',
  },
  GEOFABRIC_ENGINES_STATE: {
    where: '`scripts/engines.sh`',
    description: 'state file of one running pair (give each concurrent pair its own)',
  },
  GEOFABRIC_ENGINES_TIMEOUT: {
    where: '`scripts/engines.sh`',
    description: 'seconds to wait for an engine to start (default 90)',
  },
  GEOFABRIC_TEMPORAL_PORT: {
    where: '`scripts/engines.sh`',
    description: 'Temporal gRPC port (default: a free one; 7233 is the usual)',
  },
  GEOFABRIC_TEMPORAL_UI_PORT: { where: '`scripts/engines.sh`', description: 'Temporal Web UI port (usual: 8233)' },
  GEOFABRIC_FERRETDB_PORT: { where: '`scripts/engines.sh`', description: 'FerretDB port (usual: 27017)' },
  GEOFABRIC_LINT_DIR: {
    where: '`scripts/lint-deploy.sh`',
    description: 'where the deploy linters are installed (default `~/.cache/geofabric-lint`)',
  },
  GEOFABRIC_LINT_OFFLINE: {
    where: '`scripts/lint-deploy.sh`',
    description: '`1` installs nothing: a check whose tool is missing is skipped and named',
  },
};

const BOOLEAN_VALUES = ['0', '1', 'false', 'no', 'true', 'yes'];

interface JsonSchemaProperty {
  type?: string;
  enum?: string[];
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
}

const code = (value: string) => '`' + value + '`';
const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The type and allowed values, from the schema's JSON Schema (input side: what the environment holds). */
function describeType(property: JsonSchemaProperty): string {
  if (property.enum) {
    const values = [...property.enum].sort();
    if (values.join() === BOOLEAN_VALUES.join()) return 'boolean (`true`/`false`, `1`/`0`, `yes`/`no`)';
    return property.enum.map(code).join(', ');
  }
  if (property.type === 'integer' || property.type === 'number') {
    const kind = property.type === 'integer' ? 'integer' : 'number';
    const fmt = (n: number) => n.toLocaleString('en-US');
    if (property.minimum !== undefined && property.maximum !== undefined) {
      return `${kind} ${fmt(property.minimum)}–${fmt(property.maximum)}`;
    }
    return kind;
  }
  if (property.format === 'uri') return 'URL';
  if (property.pattern) return `string matching ${code(property.pattern)}`;
  return 'string';
}

/** The default the service uses when the variable is unset: the schema's, else the documented one. */
function describeDefault(name: string, shown: string | undefined): string {
  const parsed: unknown = (envSchema.shape as Record<string, z.ZodType>)[name]!.parse(undefined);
  if (shown !== undefined) return shown.startsWith('`') || !/[:/.]/.test(shown) ? shown : code(shown);
  if (parsed === undefined) return 'unset';
  if (parsed === '') return 'empty';
  return code(String(parsed));
}

/** The document, formatted by prettier with the project's settings (so `prettier --check .` agrees). */
export async function renderConfigDoc(): Promise<string> {
  const options = (await resolveConfig(CONFIG_DOC_PATH)) ?? {};
  return format(rawConfigDoc(), { ...options, parser: 'markdown', filepath: CONFIG_DOC_PATH });
}

function rawConfigDoc(): string {
  const json = z.toJSONSchema(envSchema, { io: 'input', unrepresentable: 'any' }) as {
    properties: Record<string, JsonSchemaProperty>;
  };
  const lines: string[] = [
    '# Configuration',
    '',
    '<!-- Generated by `npm run docs:config` from bin/config.ts (envSchema, ENV_DOCS) and scripts/config-doc.ts;',
    '     do not edit by hand: `npm run docs:check` fails when this file is stale. -->',
    '',
    'Geofabric is configured through environment variables only. `bin/config.ts` is the one place that reads',
    'them: it validates every value at start, and an invalid one stops the process with a message naming the',
    'variable (`configuration: PORT: …`). Every variable is optional; with none set, `npm start` runs the',
    'embedded default (SQLite under `./data`, jobs in process, gateway on 127.0.0.1:8080).',
    '',
    'Booleans accept `true`/`false`, `1`/`0` and `yes`/`no`. Lists are comma-separated. Leave a variable unset',
    'rather than empty: an empty URL or key is a configuration error, not "unset". In a Compose deployment every',
    'variable can be set in `deploy/.env` (see [Operations](operations.md#deploying)).',
    '',
  ];
  for (const section of ENV_SECTIONS) {
    const names = Object.keys(ENV_DOCS).filter((name) => ENV_DOCS[name as keyof typeof ENV_DOCS].section === section);
    if (names.length === 0) continue;
    lines.push(
      `## ${section}`,
      '',
      '| Variable | Default | Type / allowed values | What it does |',
      '| --- | --- | --- | --- |',
    );
    for (const name of names) {
      const doc = ENV_DOCS[name as keyof typeof ENV_DOCS];
      const property = json.properties[name];
      if (!property) throw new Error(`${name}: documented in ENV_DOCS but not in envSchema`);
      lines.push(
        `| ${code(name)} | ${cell(describeDefault(name, doc.shownDefault))} | ${cell(describeType(property))} | ${cell(doc.description)} |`,
      );
    }
    lines.push('');
  }
  lines.push(
    '## Development, test and benchmark knobs',
    '',
    'Read by the benchmarks, the test suites and the helper scripts, never by the service.',
    '',
    '| Variable | Read by | What it does |',
    '| --- | --- | --- |',
  );
  for (const [name, doc] of Object.entries(DEV_ENV)) {
    lines.push(`| ${code(name)} | ${doc.where} | ${cell(doc.description)} |`);
  }
  lines.push('');
  return lines.join('\n');
}

async function main(argv: string[]): Promise<number> {
  const text = await renderConfigDoc();
  if (argv.includes('--write')) {
    writeFileSync(CONFIG_DOC_PATH, text);
    return 0;
  }
  if (argv.includes('--check')) {
    let committed = '';
    try {
      committed = readFileSync(CONFIG_DOC_PATH, 'utf8');
    } catch {
      // missing: reported below like a stale file
    }
    if (committed === text) return 0;
    process.stderr.write('docs/configuration.md is out of date with bin/config.ts: run `npm run docs:config`\n');
    return 1;
  }
  process.stdout.write(text);
  return 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1])
  process.exitCode = await main(process.argv.slice(2));
