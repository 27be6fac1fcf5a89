#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import {
  decodeDelegationHeader,
  issueCertificate,
  parseDelegationChain,
  verifyDelegationChain,
} from '../core/delegation-cert.js';
import { signRequestBody } from '../core/gates/signature.js';
import { generateKeyPair } from '../core/identity.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { startDemoUpstream } from './demo-upstream.js';
import { EPOCH_MS } from '../core/epoch.js';
import { SUBMIT_USAGE, submitCommand } from './submit.js';
import { readKeyFile, writeKeyFile } from './key-file.js';
import { APIKEY_USAGE, apikeyCommand } from './apikey-commands.js';
import { PROOF_VERIFY_USAGE, proofVerifyCommand, storeAuditCommand } from './proof-commands.js';
import { receiptCommand } from './receipt-commands.js';
import { JOB_USAGE, jobCommand } from './job-commands.js';
import { STORE_SYNC_USAGE, storeSyncCommand } from './store-sync.js';
import { AUDIT_VERIFY_USAGE, auditVerifyCommand } from './audit-verify.js';
import { describeStartupError, portsOf, type PortSettings } from './startup-errors.js';

const USAGE = `geofabric <command>

  start                          run the gateway (PORT, default 8080; docs/configuration.md) and, unless
                                 PERCEPTION_ENABLED=false, the perception MCP server (PERCEPTION_PORT, default 8100)
                                 and, unless GOVERNANCE_ENABLED=false, the governance tool server (GOVERNANCE_PORT,
                                 default 8000)
  perception                     run the perception and compliance MCP server alone (PERCEPTION_PORT, default 8100)
  governance                     run the governance tool server alone (GOVERNANCE_PORT, default 8000)
  worker [--check]               run a swarm worker: registers with GATEWAY_URL, polls the Temporal queues of
                                 WORKER_CELL and WORKER_TOOLS; --check prints its hardware, tier, models, tools
                                 and queues as JSON and exits without registering
  keygen [--out FILE]            new Ed25519 key pair, written mode 0600 (default geofabric-key.json)
  sign REQUEST.json --key FILE   sign a request body: prints { "x-idn-signature", "body" }
  ${JOB_USAGE}
                                 submit: signs the job, POSTs it to BASE/v1/compute (default http://127.0.0.1:8080,
                                 --cert: a delegation certificate or chain, JSON or base64) and prints the job;
                                 --wait follows a job the gateway stopped waiting for (progress on stderr)
                                 exit codes: 0 complete; 1 the job failed; 2 usage, unreadable file, gateway
                                 unreachable; 3 still running; 4 refused (invalid request, signature, budget …)
                                 get: one job; list: your jobs (signed with --key) or all (--operator-token)
  ${SUBMIT_USAGE}
                                 the short form of \`job submit\`: prints the answer; exit 1 unless 2xx
  demo-upstream [--port N]       serve synthetic, labelled demo tiles on 127.0.0.1 (default port 8090) and print
                                 the TILE_URL_* settings that use them (DEMO=true start runs one itself)
  cert issue --key PRINCIPAL_KEY --agent PK --cells C1,C2 --facets F1,F2
             [--tools T1,T2] [--deny-tools T3] [--max-ops N] [--max-depth N]
             [--not-before ISO] [--not-after ISO | --days N] [--base64]
  cert verify FILE|- [--agent PK] [--cell C] [--facets F1,F2] [--tools T1] [--at ISO]
                                 checks a certificate or chain (JSON or base64); exit 1 if invalid
  proof verify RECORD_ID --url BASE [--node-pk PK] [--wait SECONDS] [--allow-pending] [--anchor [--horizon URL]]
                                 fetches /store/proof/RECORD_ID and re-verifies it offline; --node-pk: it must be
                                 written and sealed by that key (a job's proof: the node's), or custodially
                                 sealed by it (a gone worker's record); --wait asks again
                                 while only its seal is missing; with --anchor also checks its epoch root's
                                 anchor on Horizon (HORIZON_URL)
  proof verify ID1 ID2 ... | --all [--cell C] [--epoch N] [--collection T] [--allow-pending] --url BASE
                                 verifies many records the same way (--all: every record /store/query lists),
                                 with progress on stderr; prints counts and failures
                                 exit codes: 0 verified (--allow-pending: pending counts as verified);
                                 1 failed (unknown id, tampered, wrong key, anchor, listing refused);
                                 2 usage error or could not run (server unreachable); 3 pending: intact but
                                 its epoch is not sealed yet (after --wait ran out); pending and failed mixed: 1
  store audit                    re-verifies every record, seal and chain link of the configured store
                                 (progress on stderr)
  store sync [--central URL]     pushes every unsynced record, then seal, of the configured store to the central
                                 store (default CENTRAL_STORE_URL) once, with progress; exit 1 on refusals
  receipt verify RECEIPT.json [--sealer-pk HEX] [--allow-pending] [--json] [--anchor [--horizon URL]]
                                 checks a job receipt offline (docs/protocol.md §15): signed request, job hash,
                                 step records, inclusion proofs, seal chains; exit 1 if invalid
      [--recompute [--allow-http] [--allow-private] [--tile-url [STYLE=]TEMPLATE]...]
                                 then recomputes each step from the public inputs its record names (§15.6),
                                 one line per step: recomputed | differs (field: recorded vs recomputed) |
                                 upstream changed | inputs unavailable (why) | not recomputable (why); fetches
                                 only the recorded asset byte ranges and --tile-url tiles, https only unless
                                 --allow-http, no private/loopback address unless --allow-private, no redirect;
                                 exit 0 all recomputed or not recomputable, 1 invalid (nothing fetched), 2 usage,
                                 3 a step differs, 4 inputs unavailable or upstream changed
  receipt get JOB_ID [--url BASE] [-o FILE] [--wait-sealed [--timeout SECONDS]]
                                 fetches BASE/v1/compute/JOB_ID/receipt; --wait-sealed asks again until it is
                                 sealed (default up to 7200 s, progress on stderr; exit 1 if still pending)
  audit verify BUNDLE.json [--json] [--server-pk HEX]
                                 checks a generate_audit_proof bundle offline (no network); exit 1 if invalid
  ${APIKEY_USAGE}`;

const list = (value: string | undefined): string[] | undefined =>
  value === undefined
    ? undefined
    : value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);

function print(value: unknown): void {
  process.stdout.write(`${typeof value === 'string' ? value : JSON.stringify(value, null, 2)}\n`);
}

function readInput(path: string): string {
  return readFileSync(path === '-' ? 0 : path, 'utf8');
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    // The long-running commands load their modules only when run: a worker never loads the gateway's (memory).
    case 'start':
      await (await import('./start.js')).startGateway(loadConfig());
      return -1; // keeps running
    case 'perception':
      await (await import('./perception.js')).runPerceptionCli(loadConfig());
      return -1; // keeps running
    case 'governance':
      await (await import('./governance.js')).runGovernanceCli(loadConfig());
      return -1; // keeps running
    case 'audit':
      if (rest[0] !== 'verify') throw new UsageError(AUDIT_VERIFY_USAGE);
      return auditVerifyCommand(rest.slice(1), {
        log: (line: string) => process.stdout.write(`${line}\n`),
        error: (line: string) => process.stderr.write(`${line}\n`),
      });
    case 'job':
      return jobCommand(rest, {
        log: (line: string) => process.stdout.write(`${line}\n`),
        error: (line: string) => process.stderr.write(`${line}\n`),
      });
    case 'receipt':
      return receiptCommand(rest, {
        log: (line: string) => process.stdout.write(`${line}\n`),
        error: (line: string) => process.stderr.write(`${line}\n`),
      });
    case 'worker': {
      const { values } = parseArgs({ args: rest, options: { check: { type: 'boolean', default: false } } });
      const config = hourlyOnly(loadConfig(), 'worker');
      const { runWorkerCli, workerCheck } = await import('./worker.js');
      if (values.check) {
        print(await workerCheck(config));
        return 0;
      }
      await runWorkerCli(config);
      return -1; // keeps running
    }
    case 'keygen': {
      const { values } = parseArgs({ args: rest, options: { out: { type: 'string', default: 'geofabric-key.json' } } });
      const key = generateKeyPair();
      writeKeyFile(values.out, key);
      print({ public_key: key.publicKey, file: values.out });
      return 0;
    }
    case 'sign': {
      const { values, positionals } = parseArgs({
        args: rest,
        allowPositionals: true,
        options: { key: { type: 'string' } },
      });
      if (!values.key || positionals.length !== 1) throw new UsageError('sign REQUEST.json --key FILE');
      const body = JSON.parse(readInput(positionals[0] as string)) as Record<string, unknown>;
      const signed = signRequestBody(readKeyFile(values.key).secretKey, body);
      print({ 'x-idn-signature': signed.signature, body: signed.body });
      return 0;
    }
    case 'submit':
      return submitCommand(rest, print);
    case 'demo-upstream': {
      const { values } = parseArgs({ args: rest, options: { port: { type: 'string', default: '8090' } } });
      if (!/^\d{1,5}$/.test(values.port)) throw new UsageError('demo-upstream [--port N]');
      const demo = await startDemoUpstream({ port: Number(values.port) });
      print(`demo tiles (synthetic, not map data) at ${demo.url}; to use them:`);
      for (const [style, template] of Object.entries(demo.templates)) {
        print(`TILE_URL_${style.replace('-', '_').toUpperCase()}=${template}`);
      }
      return -1; // keeps running
    }
    case 'cert':
      return certCommand(rest);
    case 'proof':
      if (rest[0] !== 'verify') throw new UsageError(PROOF_VERIFY_USAGE);
      return proofVerifyCommand(rest.slice(1));
    case 'store':
      if (rest[0] === 'audit') return storeAuditCommand(rest.slice(1));
      if (rest[0] === 'sync') return storeSyncCommand(rest.slice(1));
      throw new UsageError(`store audit | ${STORE_SYNC_USAGE}`);
    case 'apikey':
      return apikeyCommand(rest);
    case undefined:
    case 'help':
    case '--help':
      print(USAGE);
      return 0;
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

function certCommand(argv: string[]): number {
  const [sub, ...rest] = argv;
  if (sub === 'issue') {
    const { values } = parseArgs({
      args: rest,
      options: {
        key: { type: 'string' },
        agent: { type: 'string' },
        cells: { type: 'string' },
        facets: { type: 'string' },
        tools: { type: 'string' },
        'deny-tools': { type: 'string' },
        'max-ops': { type: 'string' },
        'max-depth': { type: 'string', default: '0' },
        'not-before': { type: 'string' },
        'not-after': { type: 'string' },
        days: { type: 'string', default: '30' },
        base64: { type: 'boolean', default: false },
      },
    });
    if (!values.key || !values.agent || !values.cells || !values.facets) {
      throw new UsageError('cert issue needs --key, --agent, --cells and --facets');
    }
    const notBefore = values['not-before'] ?? new Date().toISOString();
    const notAfter =
      values['not-after'] ?? new Date(Date.parse(notBefore) + Number(values.days) * 86_400_000).toISOString();
    const constraints = {
      ...(values.tools ? { allowed_tools: list(values.tools) } : {}),
      ...(values['deny-tools'] ? { denied_tools: list(values['deny-tools']) } : {}),
      ...(values['max-ops'] ? { max_ops_per_hour: Number(values['max-ops']) } : {}),
    };
    const cert = issueCertificate(readKeyFile(values.key).secretKey, {
      agent_pk: values.agent,
      h3_cells: list(values.cells) ?? [],
      facets: list(values.facets) ?? [],
      not_before: notBefore,
      not_after: notAfter,
      max_depth: Number(values['max-depth']),
      constraints: Object.keys(constraints).length > 0 ? constraints : null,
    });
    print(values.base64 ? Buffer.from(JSON.stringify(cert)).toString('base64') : cert);
    return 0;
  }
  if (sub === 'verify') {
    const { values, positionals } = parseArgs({
      args: rest,
      allowPositionals: true,
      options: {
        agent: { type: 'string' },
        cell: { type: 'string' },
        facets: { type: 'string' },
        tools: { type: 'string' },
        at: { type: 'string' },
      },
    });
    if (positionals.length !== 1) throw new UsageError('cert verify FILE|-');
    const text = readInput(positionals[0] as string).trim();
    const chain =
      text.startsWith('{') || text.startsWith('[')
        ? parseDelegationChain(JSON.parse(text))
        : decodeDelegationHeader(text);
    if (!chain.ok) {
      print({ valid: false, error: chain.error, detail: chain.detail });
      return 1;
    }
    const last = chain.value[chain.value.length - 1];
    const result = verifyDelegationChain(chain.value, {
      now: values.at ? Date.parse(values.at) : Date.now(),
      agentPk: values.agent ?? last?.agent_pk ?? '',
      ...(values.cell ? { h3Cell: values.cell } : {}),
      facets: list(values.facets) ?? [],
      tools: list(values.tools) ?? [],
    });
    print(
      result.ok ? { valid: true, grant: result.value } : { valid: false, error: result.error, detail: result.detail },
    );
    return result.ok ? 0 : 1;
  }
  throw new UsageError('cert issue | cert verify');
}

class UsageError extends Error {}

/** A worker's records and seals go to its gateway, whose epochs are hourly: development epochs stay local. */
function hourlyOnly(config: Config, command: string): Config {
  if (config.epochMs !== EPOCH_MS || config.demo) {
    throw new ConfigError(`configuration: EPOCH_SECONDS and DEMO are for \`geofabric start\`, not \`${command}\``);
  }
  return config;
}

/** The ports of this process's configuration (none when it does not load). */
function configuredPorts(): PortSettings {
  try {
    return portsOf(loadConfig(process.env));
  } catch {
    return {};
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (error: unknown) => {
    // A failed command exits even when what it opened before failing (a MongoDB connection pool, the record
    // batcher's timer) would keep it running: a supervisor restarts a gateway only once it has exited
    // (docs/operations.md "Startup errors"). Unref'd: a process with nothing left open ends at once.
    setTimeout(() => process.exit(), 1_000).unref();
    if (error instanceof UsageError) process.stderr.write(`usage: ${error.message}\n\n${USAGE}\n`);
    else if (error instanceof ConfigError) process.stderr.write(`${error.message}\n`);
    else {
      // Something this machine must provide (Temporal, MongoDB, the gateway, a free port): one line naming the
      // setting and what to do, exit 1 (docs/operations.md "Startup errors").
      const known = describeStartupError(error, configuredPorts(), /^(debug|trace)$/.test(process.env.LOG_LEVEL ?? ''));
      if (known !== null) {
        process.stderr.write(`geofabric: ${known}\n`);
        process.exitCode = 1;
        return;
      }
      process.stderr.write(`geofabric: ${(error as Error).message}\n`);
    }
    process.exitCode = 2;
  },
);
