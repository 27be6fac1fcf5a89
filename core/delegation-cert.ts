/**
 * GEIANT v1 delegation certificates (docs/protocol.md §10 "Delegation certificate", docs/protocol.md §2.9 and 5).
 *
 * A certificate lets `principal_pk` hand a subset of its rights to `agent_pk`. A chain is root first:
 * the root principal is the human, every link is signed by the previous link's agent, rights only
 * narrow down the chain, and the last agent is the requester. Callers must run verifyDelegationChain
 * before trusting anything in a certificate: parsing proves shape, not authority.
 */
import { z } from 'zod';
import { canonicalJson } from './canonical-json.js';
import { describeZodIssue } from './zod-issue.js';
import { fail, pass, type Check } from './check.js';
import { cellCover, isCell } from './h3-cell.js';
import { blake3Hex, sha256Hex } from './hash.js';
import { checkPublicKey, keyPairFromSecret, signMessage, verifySignature } from './identity.js';
import { checkJsonText } from './strict-json.js';

export interface DelegationConstraints {
  max_ops_per_hour?: number;
  allowed_tools?: string[];
  denied_tools?: string[];
  require_human_approval?: boolean;
}

export interface DelegationCertificate {
  version: 1;
  agent_pk: string;
  principal_pk: string;
  h3_cells: string[];
  facets: string[];
  not_before: string;
  not_after: string;
  max_depth: number;
  constraints: DelegationConstraints | null;
  principal_signature: string;
}

export type UnsignedCertificate = Omit<DelegationCertificate, 'principal_signature'>;

/** Longest chain accepted: bounds the work an unauthenticated header can cause. */
export const MAX_CHAIN_LENGTH = 8;
/**
 * Cells per certificate: a city at resolution 9 is a few thousand cells; coarser cells cover the rest. Refused
 * above it (delegation_invalid) before any cell is validated, so a certificate's cost has a bound.
 */
export const MAX_CERT_CELLS = 4096;
/** Facets per certificate, and tools per allowed/denied list: lists compared pairwise, so kept short. */
export const MAX_CERT_FACETS = 64;
export const MAX_CERT_TOOLS = 256;
const DEFAULT_SKEW_MS = 60_000;
const MAX_HEADER_CHARS = 65_536;
const WILDCARD_FACET = '*';

const publicKeyText = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex');
const name = z.string().min(1);
const isoTime = z.iso.datetime({ offset: true });

const constraintsSchema = z.strictObject({
  max_ops_per_hour: z.number().int().nonnegative().optional(),
  allowed_tools: z.array(name).max(MAX_CERT_TOOLS).optional(),
  denied_tools: z.array(name).max(MAX_CERT_TOOLS).optional(),
  require_human_approval: z.boolean().optional(),
});

export const delegationCertificateSchema = z
  .strictObject({
    version: z.literal(1),
    agent_pk: publicKeyText,
    principal_pk: publicKeyText,
    h3_cells: z.array(z.string().refine(isCell, 'must be a valid H3 cell (15 lowercase hex)')).max(MAX_CERT_CELLS),
    facets: z.array(name).max(MAX_CERT_FACETS),
    not_before: isoTime,
    not_after: isoTime,
    max_depth: z.number().int().nonnegative(),
    // Absent and null sign the same (null), so a certificate without the field parses to null.
    constraints: constraintsSchema.nullable().default(null),
    principal_signature: z.string().regex(/^[0-9a-f]{128}$/, 'must be 128 lowercase hex'),
  })
  .refine((cert) => Date.parse(cert.not_before) <= Date.parse(cert.not_after), {
    message: 'not_before is after not_after',
    path: ['not_after'],
  });

// Compile-time proof that the schema's output is the public interface.
const _schemaMatchesInterface = (parsed: z.output<typeof delegationCertificateSchema>): DelegationCertificate => parsed;

/** JCS of exactly the nine signed fields; `constraints` is null when absent. */
export function certificateSigningString(cert: UnsignedCertificate | DelegationCertificate): string {
  return canonicalJson({
    version: cert.version,
    agent_pk: cert.agent_pk,
    principal_pk: cert.principal_pk,
    h3_cells: cert.h3_cells,
    facets: cert.facets,
    not_before: cert.not_before,
    not_after: cert.not_after,
    max_depth: cert.max_depth,
    constraints: cert.constraints ?? null,
  });
}

/** `cert_hash`: SHA-256 hex of the signing string. */
export const certificateHash = (cert: UnsignedCertificate | DelegationCertificate): string =>
  sha256Hex(certificateSigningString(cert));

/** The `idn_delegation_cert` token claim: Blake3 hex of the signing string. */
export const certificateBlake3 = (cert: UnsignedCertificate | DelegationCertificate): string =>
  blake3Hex(certificateSigningString(cert));

function copyConstraints(c: DelegationConstraints | null | undefined): DelegationConstraints | null {
  if (c === null || c === undefined) return null;
  const out: DelegationConstraints = {};
  if (c.max_ops_per_hour !== undefined) out.max_ops_per_hour = c.max_ops_per_hour;
  if (c.allowed_tools !== undefined) out.allowed_tools = [...c.allowed_tools];
  if (c.denied_tools !== undefined) out.denied_tools = [...c.denied_tools];
  if (c.require_human_approval !== undefined) out.require_human_approval = c.require_human_approval;
  return out;
}

/**
 * Signs a certificate with the principal's key; throws TypeError when the fields do not make a valid certificate
 * (including an agent_pk that is not a usable Ed25519 key: small-order or non-canonical).
 */
export function issueCertificate(
  principalSecretKey: string,
  fields: Omit<UnsignedCertificate, 'version' | 'principal_pk' | 'constraints'> & {
    constraints?: DelegationConstraints | null;
  },
): DelegationCertificate {
  const { publicKey } = keyPairFromSecret(principalSecretKey);
  const unsigned: UnsignedCertificate = {
    version: 1,
    agent_pk: fields.agent_pk,
    principal_pk: publicKey,
    h3_cells: [...fields.h3_cells],
    facets: [...fields.facets],
    not_before: fields.not_before,
    not_after: fields.not_after,
    max_depth: fields.max_depth,
    constraints: copyConstraints(fields.constraints),
  };
  const cert = {
    ...unsigned,
    principal_signature: signMessage(principalSecretKey, certificateSigningString(unsigned)),
  };
  const checked = delegationCertificateSchema.safeParse(cert);
  if (!checked.success)
    throw new TypeError(`cannot issue certificate: ${describeZodIssue(checked.error, 'certificate')}`);
  // A delegation to a small-order or non-canonical key never verifies, and would hand the rights to anyone
  // (such a key "signs" any message): refused when issuing, not only when verifying.
  const agentKey = checkPublicKey(cert.agent_pk);
  if (!agentKey.ok) throw new TypeError(`cannot issue certificate: agent_pk: ${agentKey.detail}`);
  return cert;
}

/** A certificate object or an array of them (root first), validated; shape only, not authority. */
export function parseDelegationChain(input: unknown): Check<DelegationCertificate[]> {
  const items = Array.isArray(input) ? input : [input];
  if (items.length === 0) return fail('delegation_invalid', 'delegation chain is empty');
  if (items.length > MAX_CHAIN_LENGTH) {
    return fail('delegation_invalid', `delegation chain has ${items.length} links; at most ${MAX_CHAIN_LENGTH}`);
  }
  const chain: DelegationCertificate[] = [];
  for (const [i, item] of items.entries()) {
    const cells = (item as { h3_cells?: unknown } | null)?.h3_cells;
    // Counted before the schema validates (and h3 checks) each cell: the refusal costs nothing.
    if (Array.isArray(cells) && cells.length > MAX_CERT_CELLS) {
      return fail('delegation_invalid', `link ${i}: h3_cells has ${cells.length} cells; at most ${MAX_CERT_CELLS}`);
    }
    const parsed = delegationCertificateSchema.safeParse(item);
    if (!parsed.success)
      return fail('delegation_invalid', `link ${i}: ${describeZodIssue(parsed.error, 'certificate')}`);
    chain.push(parsed.data);
  }
  return pass(chain);
}

const BASE64 = /^(?:[A-Za-z0-9+/]+|[A-Za-z0-9_-]+)={0,2}$/;

/** Decodes the `x-svc-delegation-cert` header: base64 (standard or url-safe) of a certificate or chain. */
export function decodeDelegationHeader(base64: string): Check<DelegationCertificate[]> {
  const text = typeof base64 === 'string' ? base64.trim() : '';
  if (text.length === 0) return fail('delegation_invalid', 'delegation header is empty');
  if (text.length > MAX_HEADER_CHARS) return fail('delegation_invalid', 'delegation header is too large');
  if (!BASE64.test(text) || text.replace(/=+$/, '').length % 4 === 1) {
    return fail('delegation_invalid', 'delegation header is not base64');
  }
  let json: Check<unknown>;
  try {
    const bytes = Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    // Strict JSON: a repeated key would let a proxy and the gateway read different certificates.
    json = checkJsonText(new TextDecoder('utf-8', { fatal: true }).decode(bytes), 'delegation header');
  } catch {
    return fail('delegation_invalid', 'delegation header is not base64 of UTF-8 JSON');
  }
  return json.ok ? parseDelegationChain(json.value) : fail('delegation_invalid', json.detail);
}

export interface DelegationRequest {
  /** Milliseconds since the epoch; core reads no clock. */
  now: number;
  agentPk: string;
  h3Cell?: string;
  /** Every cell the request names (job cell, step cells…): each must lie inside the last link's cells. */
  h3Cells?: readonly string[];
  /** The configured trust anchors (TRUSTED_PRINCIPALS); when non-empty the root principal must be one. */
  trustedPrincipals?: ReadonlySet<string>;
  facets?: string[];
  tools?: string[];
  /** Tolerated clock difference at both ends of each validity window; default 60 000. */
  skewMs?: number;
}

export interface DelegationGrant {
  human_principal_pk: string;
  agent_pk: string;
  /** Number of links: 1 when the human delegated directly to the requester. */
  chain_depth: number;
  /** cert_hash of the last link. */
  cert_hash: string;
  h3_cells: string[];
  facets: string[];
  /** null when no link restricts tools to a list. */
  allowed_tools: string[] | null;
  denied_tools: string[];
  max_ops_per_hour: number | null;
  require_human_approval: boolean;
  not_before: string;
  not_after: string;
}

/** The rights in force after a link: explicit fields of the link, constraints inherited when absent. */
interface Effective {
  allowed: string[] | null;
  denied: string[];
  maxOps: number | null;
  humanApproval: boolean;
}

const missingFrom = (items: readonly string[], set: readonly string[]): string | undefined =>
  items.find((item) => !set.includes(item));

/** Whether `granted` (a certificate's facets) grants `facet`; '*' grants every facet. */
export const facetGranted = (granted: readonly string[], facet: string): boolean =>
  granted.includes(WILDCARD_FACET) || granted.includes(facet);

/** Narrowing of `child` against its parent; returns a reason when the child widens anything. */
function widening(
  parent: DelegationCertificate,
  child: DelegationCertificate,
  rights: Effective,
  i: number,
): string | undefined {
  const inParent = cellCover(parent.h3_cells);
  const cell = child.h3_cells.find((c) => !inParent(c));
  if (cell !== undefined) return `link ${i}: cell ${cell} is not inside link ${i - 1}'s cells (widened cells)`;
  const facet = child.facets.find((f) => !facetGranted(parent.facets, f));
  if (facet !== undefined) return `link ${i}: facet "${facet}" is not granted by link ${i - 1} (widened facets)`;
  const c = child.constraints;
  if (rights.allowed !== null && c?.allowed_tools !== undefined) {
    const tool = missingFrom(c.allowed_tools, rights.allowed);
    if (tool !== undefined) return `link ${i}: tool "${tool}" is not allowed by link ${i - 1} (widened tools)`;
  }
  if (c?.denied_tools !== undefined) {
    const tool = missingFrom(rights.denied, c.denied_tools);
    if (tool !== undefined) return `link ${i}: tool "${tool}" denied by link ${i - 1} is not denied (widened tools)`;
  }
  if (Date.parse(child.not_before) < Date.parse(parent.not_before)) {
    return `link ${i}: not_before ${child.not_before} is earlier than link ${i - 1}'s (widened window)`;
  }
  if (Date.parse(child.not_after) > Date.parse(parent.not_after)) {
    return `link ${i}: not_after ${child.not_after} is later than link ${i - 1}'s (widened window)`;
  }
  if (rights.maxOps !== null && c?.max_ops_per_hour !== undefined && c.max_ops_per_hour > rights.maxOps) {
    return `link ${i}: max_ops_per_hour ${c.max_ops_per_hour} exceeds link ${i - 1}'s ${rights.maxOps}`;
  }
  return undefined;
}

function narrow(rights: Effective | null, c: DelegationConstraints | null): Effective {
  // Intersected with the parent's list: the same as the child's own list on a chain that passed the
  // narrowing check, and never wider on one that did not (delegationChainRights folds unverified chains).
  const parentAllowed = rights?.allowed ?? null;
  const own = c?.allowed_tools;
  const allowed =
    own === undefined ? parentAllowed : parentAllowed === null ? own : own.filter((t) => parentAllowed.includes(t));
  const denied = [...(rights?.denied ?? [])];
  for (const tool of c?.denied_tools ?? []) if (!denied.includes(tool)) denied.push(tool);
  const limits = [rights?.maxOps, c?.max_ops_per_hour].filter((n): n is number => typeof n === 'number');
  return {
    allowed: allowed === null ? null : [...allowed],
    denied,
    maxOps: limits.length > 0 ? Math.min(...limits) : null,
    humanApproval: (rights?.humanApproval ?? false) || c?.require_human_approval === true,
  };
}

/**
 * Why link `i` fails on its own and against its parent (shape, signature, keys, linkage, narrowing,
 * depth), or undefined; `rights` are those in force after link i - 1 (null at the root). Time is not judged.
 */
function linkStructureIssue(
  chain: readonly DelegationCertificate[],
  i: number,
  rights: Effective | null,
): string | undefined {
  const link = chain[i] as DelegationCertificate;
  // Re-validate: callers may pass certificates that never went through parseDelegationChain.
  const shape = delegationCertificateSchema.safeParse(link);
  if (!shape.success) return `link ${i}: ${describeZodIssue(shape.error, 'certificate')}`;

  if (!verifySignature(link.principal_pk, certificateSigningString(link), link.principal_signature)) {
    const key = checkPublicKey(link.principal_pk);
    return key.ok
      ? `link ${i}: principal_signature does not verify under principal_pk`
      : `link ${i}: principal_pk is invalid: ${key.detail}`;
  }
  const agentKey = checkPublicKey(link.agent_pk);
  if (!agentKey.ok) return `link ${i}: agent_pk is invalid: ${agentKey.detail}`;
  // Every key appears once: the root principal, then each agent. A loop (A→B→A, or A→A) would let a key
  // re-enter its own chain below itself and hold rights by two routes.
  const seen = chain.slice(0, i + 1).findIndex((earlier) => earlier.principal_pk === link.agent_pk);
  if (seen >= 0) {
    return `link ${i}: agent_pk is link ${seen}'s principal_pk (delegation loop)`;
  }

  const parent = chain[i - 1];
  if (parent !== undefined && rights !== null) {
    if (parent.agent_pk !== link.principal_pk) {
      return `link ${i}: principal_pk is not link ${i - 1}'s agent_pk (broken chain)`;
    }
    const widened = widening(parent, link, rights, i);
    if (widened !== undefined) return widened;
    if (parent.max_depth < 1) return `link ${i - 1}: max_depth 0 does not allow further delegation`;
    if (link.max_depth > parent.max_depth - 1) {
      return `link ${i}: max_depth ${link.max_depth} must be at most ${parent.max_depth - 1} (link ${i - 1} has ${parent.max_depth})`;
    }
  }
  return undefined;
}

/**
 * Why the chain's root may not be trusted: with trust anchors configured, the root principal must be one of
 * them, or anyone could mint a "human" key and delegate to itself. Without anchors only form is checked.
 */
export function rootTrustIssue(
  chain: readonly Pick<DelegationCertificate, 'principal_pk'>[],
  trusted: ReadonlySet<string> | undefined,
): string | undefined {
  if (trusted === undefined || trusted.size === 0) return undefined;
  const root = chain[0]?.principal_pk;
  return root !== undefined && trusted.has(root)
    ? undefined
    : `untrusted principal: the chain's root ${String(root)} is not among the trusted principals`;
}

/** Why link `i` is not valid at `now` (with `skewMs` tolerated at both ends), or undefined. */
export function linkTimeIssue(
  link: Pick<DelegationCertificate, 'not_before' | 'not_after'>,
  i: number,
  now: number,
  skewMs = DEFAULT_SKEW_MS,
): string | undefined {
  if (now < Date.parse(link.not_before) - skewMs) return `link ${i}: not valid before ${link.not_before}`;
  if (now > Date.parse(link.not_after) + skewMs) return `link ${i}: expired at ${link.not_after}`;
  return undefined;
}

/** The grant of a chain whose every link passed: rights of the whole chain, cells and window of the last link. */
function grantOf(chain: readonly DelegationCertificate[], rights: Effective): DelegationGrant | undefined {
  const root = chain[0];
  const last = chain[chain.length - 1];
  if (root === undefined || last === undefined) return undefined;
  return {
    human_principal_pk: root.principal_pk,
    agent_pk: last.agent_pk,
    chain_depth: chain.length,
    cert_hash: certificateHash(last),
    h3_cells: [...last.h3_cells],
    facets: [...last.facets],
    allowed_tools: rights.allowed,
    denied_tools: rights.denied,
    max_ops_per_hour: rights.maxOps,
    require_human_approval: rights.humanApproval,
    not_before: last.not_before,
    not_after: last.not_after,
  };
}

/**
 * The structural half of verifyDelegationChain: per link, shape, signature, keys, linkage, narrowing
 * (cells by H3 containment, facets, tools, window, rate) and depth, with the same reasons; validity at a
 * time and the request are NOT judged. For evidence checked long after the fact, and for answers that
 * report time separately (core/governance-checks.ts). On a passing chain the last link's window lies
 * inside every other link's, so the grant's not_before/not_after are the chain's.
 */
export function verifyDelegationChainStructure(
  chain: readonly DelegationCertificate[],
  options: { trustedPrincipals?: ReadonlySet<string> } = {},
): Check<DelegationGrant> {
  if (!Array.isArray(chain) || chain.length === 0) return fail('delegation_invalid', 'delegation chain is empty');
  if (chain.length > MAX_CHAIN_LENGTH) {
    return fail('delegation_invalid', `delegation chain has ${chain.length} links; at most ${MAX_CHAIN_LENGTH}`);
  }
  const untrusted = rootTrustIssue(chain, options.trustedPrincipals);
  if (untrusted !== undefined) return fail('delegation_invalid', untrusted);
  let rights: Effective | null = null;
  for (let i = 0; i < chain.length; i++) {
    const issue = linkStructureIssue(chain, i, rights);
    if (issue !== undefined) return fail('delegation_invalid', issue);
    rights = narrow(rights, (chain[i] as DelegationCertificate).constraints);
  }
  const grant = rights === null ? undefined : grantOf(chain, rights);
  return grant === undefined ? fail('delegation_invalid', 'delegation chain is empty') : pass(grant);
}

/**
 * The tool rights a chain puts in force (allowed lists intersected, denied lists united, the lowest
 * max_ops_per_hour, require_human_approval if any link sets it), folded WITHOUT verifying the chain: for
 * reporting what a chain would allow next to a separate verdict. Trust it only with a verified chain.
 */
export function delegationChainRights(
  chain: readonly Pick<DelegationCertificate, 'constraints'>[],
): Pick<DelegationGrant, 'allowed_tools' | 'denied_tools' | 'max_ops_per_hour' | 'require_human_approval'> {
  let rights: Effective | null = null;
  for (const link of chain) rights = narrow(rights, link.constraints ?? null);
  return {
    allowed_tools: rights?.allowed ?? null,
    denied_tools: rights?.denied ?? [],
    max_ops_per_hour: rights?.maxOps ?? null,
    require_human_approval: rights?.humanApproval ?? false,
  };
}

/**
 * Decides whether `chain` authorises `request`. Per link, in order: signature, keys, linkage,
 * narrowing, depth, validity at `now`; then the request against the last link. Every failure is
 * `delegation_invalid` with a reason naming the link.
 */
export function verifyDelegationChain(
  chain: DelegationCertificate[],
  request: DelegationRequest,
): Check<DelegationGrant> {
  if (!Array.isArray(chain) || chain.length === 0) return fail('delegation_invalid', 'delegation chain is empty');
  if (chain.length > MAX_CHAIN_LENGTH) {
    return fail('delegation_invalid', `delegation chain has ${chain.length} links; at most ${MAX_CHAIN_LENGTH}`);
  }
  if (!Number.isFinite(request.now)) return fail('delegation_invalid', 'request time is not a number');
  // First: a chain from an unknown root is refused whatever it says, before its signatures cost anything.
  const untrusted = rootTrustIssue(chain, request.trustedPrincipals);
  if (untrusted !== undefined) return fail('delegation_invalid', untrusted);
  const skew = request.skewMs ?? DEFAULT_SKEW_MS;

  let rights: Effective | null = null;
  for (let i = 0; i < chain.length; i++) {
    const link = chain[i] as DelegationCertificate;
    const issue = linkStructureIssue(chain, i, rights) ?? linkTimeIssue(link, i, request.now, skew);
    if (issue !== undefined) return fail('delegation_invalid', issue);
    rights = narrow(rights, link.constraints);
  }

  const root = chain[0];
  const last = chain[chain.length - 1];
  if (root === undefined || last === undefined || rights === null) {
    return fail('delegation_invalid', 'delegation chain is empty');
  }
  if (last.agent_pk !== request.agentPk) {
    return fail('delegation_invalid', `chain ends at ${last.agent_pk}, not the requester ${request.agentPk}`);
  }
  if (request.h3Cell !== undefined) {
    if (!isCell(request.h3Cell)) {
      return fail('delegation_invalid', `requested cell ${JSON.stringify(request.h3Cell)} is not a valid H3 cell`);
    }
  }
  const requested = [...(request.h3Cell === undefined ? [] : [request.h3Cell]), ...(request.h3Cells ?? [])];
  const inGrant = cellCover(last.h3_cells);
  for (const cell of requested) {
    if (!isCell(cell))
      return fail('delegation_invalid', `requested cell ${JSON.stringify(cell)} is not a valid H3 cell`);
    if (!inGrant(cell)) return fail('delegation_invalid', `cell ${cell} is outside the delegated cells`);
  }
  const facet = (request.facets ?? []).find((f) => !facetGranted(last.facets, f));
  if (facet !== undefined) return fail('delegation_invalid', `facet "${facet}" is not delegated`);
  for (const tool of request.tools ?? []) {
    if (rights.allowed !== null && !rights.allowed.includes(tool)) {
      return fail('delegation_invalid', `tool "${tool}" is not in the allowed tools`);
    }
    if (rights.denied.includes(tool)) return fail('delegation_invalid', `tool "${tool}" is denied`);
  }

  const grant = grantOf(chain, rights);
  return grant === undefined ? fail('delegation_invalid', 'delegation chain is empty') : pass(grant);
}
