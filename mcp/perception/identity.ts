/**
 * The perception server's identity (item 2): the agent key that signs every breadcrumb and the
 * delegation certificate (or chain) that traces the agent to a human principal.
 *
 * Sources, in order:
 *   agent key    IDN_AGENT_SK (hex seed), else `<dataDir>/perception/agent-key.json` (created mode 0600 on
 *                first start, never overwritten).
 *   certificate  IDN_DELEGATION_CERT (JSON certificate or chain, root first; base64 of either accepted),
 *                verified now against the agent key: any problem is a startup error naming it, so tools never
 *                run unaudited or under a certificate nobody can check.
 *                Without one, a local development principal (`principal-key.json`) issues the agent a
 *                certificate (`delegation-cert.json`) for the default perception cell, the facets the tools
 *                use and the docs/protocol.md §4.3 tool whitelist, 30 days, max_depth 0. It is reused while it verifies
 *                with more than a day left, and re-issued otherwise (expired, expiring, or the agent key
 *                changed). Reports mark that principal local.
 * Files live under `<dataDir>/perception/` and must never be committed (`data/` is ignored).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  decodeDelegationHeader,
  issueCertificate,
  parseDelegationChain,
  verifyDelegationChain,
  type DelegationCertificate,
  type DelegationGrant,
} from '../../core/delegation-cert.js';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { generateKeyPair, keyPairFromSecret, type KeyPair } from '../../core/identity.js';
import { DEFAULT_ALLOWED_TOOLS } from '../../core/tool-preflight.js';

/** Facets the perception tools exercise (`perception_*`) and the audit tools (`idn_*`). */
export const PERCEPTION_FACETS = ['perception', 'compliance'] as const;
export const DEV_CERT_DAYS = 30;
const DAY_MS = 86_400_000;

export interface PerceptionIdentity {
  agent: KeyPair;
  /** Root first; the last link's agent_pk is `agent.publicKey`. */
  chain: DelegationCertificate[];
  /** The last link: the certificate the agent acts under. */
  certificate: DelegationCertificate;
  /** True when the root principal is the local development principal provisioned here. */
  principalLocal: boolean;
  grant: DelegationGrant;
  /** Where the key and the certificate came from, for the startup log. */
  agentSource: string;
  certificateSource: string;
  principalKeyPath?: string;
}

export interface IdentityOptions {
  dataDir: string;
  /** IDN_AGENT_SK */
  agentSecretKey?: string | undefined;
  /** IDN_DELEGATION_CERT */
  delegationCert?: string | undefined;
  nowMs: number;
  /**
   * TRUSTED_PRINCIPALS: when non-empty, the chain the server acts under must start at one of them, the
   * configured one and the local development one alike (add the local principal's key to use it).
   */
  trustedPrincipals?: ReadonlySet<string> | undefined;
}

/** A configured identity that cannot be used; the message names the variable or file and the problem. */
export class PerceptionIdentityError extends Error {
  override name = 'PerceptionIdentityError';
}

export function perceptionDir(dataDir: string): string {
  return join(dataDir, 'perception');
}

function writePrivateJson(path: string, value: unknown, overwrite: boolean): void {
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600, flag: overwrite ? 'w' : 'wx' });
}

function readKey(path: string): KeyPair {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as { secret_key?: unknown };
    if (typeof parsed.secret_key !== 'string') throw new TypeError('no secret_key');
    return keyPairFromSecret(parsed.secret_key);
  } catch (error) {
    throw new PerceptionIdentityError(`${path}: not a usable key file (${(error as Error).message})`);
  }
}

/** Reads the key file at `path`, or creates it (mode 0600, never overwriting) with a fresh key. */
function loadOrCreateKey(path: string): { key: KeyPair; created: boolean } {
  if (existsSync(path)) return { key: readKey(path), created: false };
  const key = generateKeyPair();
  writePrivateJson(path, { public_key: key.publicKey, secret_key: key.secretKey }, false);
  return { key, created: true };
}

function loadAgentKey(dir: string, secret: string | undefined): { key: KeyPair; source: string } {
  if (secret !== undefined && secret !== '') {
    try {
      return { key: keyPairFromSecret(secret.trim()), source: 'IDN_AGENT_SK' };
    } catch (error) {
      throw new PerceptionIdentityError(`IDN_AGENT_SK: ${(error as Error).message}`);
    }
  }
  const path = join(dir, 'agent-key.json');
  const { key, created } = loadOrCreateKey(path);
  return { key, source: created ? `${path} (new)` : path };
}

function parseConfiguredChain(text: string): DelegationCertificate[] {
  const trimmed = text.trim();
  let parsed;
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    let json: unknown;
    try {
      json = JSON.parse(trimmed);
    } catch (error) {
      throw new PerceptionIdentityError(`IDN_DELEGATION_CERT: not valid JSON (${(error as Error).message})`);
    }
    parsed = parseDelegationChain(json);
  } else {
    parsed = decodeDelegationHeader(trimmed);
  }
  if (!parsed.ok) throw new PerceptionIdentityError(`IDN_DELEGATION_CERT: ${parsed.detail}`);
  return parsed.value;
}

const verify = (
  chain: DelegationCertificate[],
  agent: KeyPair,
  nowMs: number,
  trustedPrincipals: ReadonlySet<string> | undefined,
) =>
  verifyDelegationChain(chain, {
    now: nowMs,
    agentPk: agent.publicKey,
    ...(trustedPrincipals === undefined ? {} : { trustedPrincipals }),
  });

/** The development certificate the local principal issues the agent. */
function issueDevCertificate(principal: KeyPair, agent: KeyPair, nowMs: number): DelegationCertificate {
  return issueCertificate(principal.secretKey, {
    agent_pk: agent.publicKey,
    h3_cells: [DEFAULT_PERCEPTION_CELL],
    facets: [...PERCEPTION_FACETS],
    not_before: new Date(nowMs).toISOString(),
    not_after: new Date(nowMs + DEV_CERT_DAYS * DAY_MS).toISOString(),
    max_depth: 0,
    constraints: { allowed_tools: [...DEFAULT_ALLOWED_TOOLS] },
  });
}

function readDevCertificate(path: string): DelegationCertificate[] | null {
  if (!existsSync(path)) return null;
  try {
    const parsed = parseDelegationChain(JSON.parse(readFileSync(path, 'utf8')));
    return parsed.ok ? parsed.value : null;
  } catch {
    return null;
  }
}

export function loadPerceptionIdentity(options: IdentityOptions): PerceptionIdentity {
  const dir = perceptionDir(options.dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const { key: agent, source: agentSource } = loadAgentKey(dir, options.agentSecretKey);

  if (options.delegationCert !== undefined && options.delegationCert.trim() !== '') {
    const chain = parseConfiguredChain(options.delegationCert);
    const checked = verify(chain, agent, options.nowMs, options.trustedPrincipals);
    if (!checked.ok) throw new PerceptionIdentityError(`IDN_DELEGATION_CERT: ${checked.detail}`);
    return {
      agent,
      chain,
      certificate: chain[chain.length - 1] as DelegationCertificate,
      principalLocal: false,
      grant: checked.value,
      agentSource,
      certificateSource: 'IDN_DELEGATION_CERT',
    };
  }

  const principalKeyPath = join(dir, 'principal-key.json');
  const certPath = join(dir, 'delegation-cert.json');
  const { key: principal } = loadOrCreateKey(principalKeyPath);
  const trusted = options.trustedPrincipals;
  if (trusted !== undefined && trusted.size > 0 && !trusted.has(principal.publicKey)) {
    throw new PerceptionIdentityError(
      `untrusted principal: TRUSTED_PRINCIPALS is set and the local development principal ${principal.publicKey} ` +
        `(${principalKeyPath}) is not among them; set IDN_DELEGATION_CERT to a chain from a trusted principal, ` +
        'or add that key to TRUSTED_PRINCIPALS',
    );
  }
  const existing = readDevCertificate(certPath);
  if (existing !== null && existing.length === 1 && existing[0]?.principal_pk === principal.publicKey) {
    const checked = verify(existing, agent, options.nowMs, trusted);
    // Reused while it verifies and has a day left, so a long-running server does not hit its expiry soon.
    if (checked.ok && Date.parse(existing[0].not_after) - options.nowMs > DAY_MS) {
      return {
        agent,
        chain: existing,
        certificate: existing[0],
        principalLocal: true,
        grant: checked.value,
        agentSource,
        certificateSource: certPath,
        principalKeyPath,
      };
    }
  }
  // Missing, expired, or issued to another agent key: the local principal issues a fresh one.
  const cert = issueDevCertificate(principal, agent, options.nowMs);
  writePrivateJson(certPath, cert, true);
  const checked = verify([cert], agent, options.nowMs, trusted);
  if (!checked.ok) throw new PerceptionIdentityError(`${certPath}: ${checked.detail}`);
  return {
    agent,
    chain: [cert],
    certificate: cert,
    principalLocal: true,
    grant: checked.value,
    agentSource,
    certificateSource: `${certPath} (${existing === null ? 'new' : 're-issued'})`,
    principalKeyPath,
  };
}
