import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { verifyAuditBundle, type AuditBundleVerification } from '../core/audit-bundle.js';

export const AUDIT_VERIFY_USAGE = 'audit verify BUNDLE.json [--json] [--server-pk HEX]';

export interface CommandOutput {
  log(line: string): void;
  error(line: string): void;
}

/**
 * `geofabric audit verify <bundle.json> [--json]`: checks a `generate_audit_proof` evidence bundle offline
 * with core/ only (no network, no store, no server to trust) and prints one line per check, or the whole
 * verdict as JSON with --json. --server-pk names the server key the bundle must be signed with. Exit codes: 0 valid (warnings allowed), 1 invalid, 2 usage error or a file
 * that cannot be read as JSON. `args` are the words after `audit verify`.
 */
export async function auditVerifyCommand(args: string[], out: CommandOutput): Promise<number> {
  const usage = (reason: string): number => {
    out.error(`usage: geofabric ${AUDIT_VERIFY_USAGE}\n  ${reason}`);
    return 2;
  };
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: { json: { type: 'boolean', default: false }, 'server-pk': { type: 'string' } },
    });
  } catch (error) {
    return usage((error as Error).message);
  }
  const [file, ...extra] = parsed.positionals;
  if (file === undefined) return usage('the bundle file is missing');
  if (extra.length > 0) return usage(`one bundle file at a time (also given: ${extra.join(' ')})`);
  const serverPk = parsed.values['server-pk'];
  if (serverPk !== undefined && !/^[0-9a-f]{64}$/.test(serverPk)) return usage('--server-pk is 64 lowercase hex');

  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (code ?? 'unreadable');
    out.error(`cannot read ${file}: ${why}`);
    return 2;
  }
  let bundle: unknown;
  try {
    bundle = JSON.parse(text);
  } catch (error) {
    out.error(`cannot read ${file}: not JSON (${(error as Error).message})`);
    return 2;
  }

  const verdict = verifyAuditBundle(bundle, serverPk === undefined ? {} : { serverPk });
  if (parsed.values.json) out.log(JSON.stringify({ file, ...verdict }, null, 2));
  else for (const line of report(file, bundle, verdict)) out.log(line);
  return verdict.valid ? 0 : 1;
}

/** What the bundle claims, read without trusting it: only strings are shown. */
function claim(bundle: unknown, ...path: string[]): string {
  let value: unknown = bundle;
  for (const key of path)
    value = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
  return typeof value === 'string' ? value : '?';
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

function report(file: string, bundle: unknown, verdict: AuditBundleVerification): string[] {
  const width = Math.max(...verdict.checks.map((c) => c.name.length));
  const lines = [
    `audit bundle ${file}`,
    `  agent   ${claim(bundle, 'agent_pk')}`,
    `  period  ${claim(bundle, 'period', 'from')} to ${claim(bundle, 'period', 'to')}`,
    `  server  ${claim(bundle, 'server_pk')} (generated ${claim(bundle, 'generated_at')})`,
    '',
    ...verdict.checks.map(
      (c) => `  ${c.ok ? 'ok  ' : 'FAIL'}  ${c.name.padEnd(width)}${c.detail === undefined ? '' : `  ${c.detail}`}`,
    ),
  ];
  if (verdict.errors.length > 0) lines.push('', 'errors:', ...verdict.errors.map((e) => `  - ${e}`));
  if (verdict.warnings.length > 0) lines.push('', 'warnings:', ...verdict.warnings.map((w) => `  - ${w}`));
  const counts = `${plural(verdict.errors.length, 'error')}, ${plural(verdict.warnings.length, 'warning')}`;
  lines.push('', verdict.valid ? `VALID (${counts})` : `INVALID (${counts})`);
  return lines;
}
