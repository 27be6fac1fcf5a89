/**
 * The evidence bundle of `generate_audit_proof` (docs/protocol.md §4.3): everything an auditor needs to check,
 * offline and without trusting any Geofabric server, what one agent did in a period and under whose
 * authority. Version 1, snake_case, every field always present:
 *
 *   bundle_version    1
 *   generated_at      ISO 8601 UTC, when the server assembled the bundle
 *   agent_pk          the agent (64 hex)
 *   period            { from, to }: the period asked for, as ISO 8601 UTC
 *   report            the perception service's compliance report (docs/protocol.md §2.8) as fetched, or null
 *   report_error      why the report is missing (null when present)
 *   blocks            the agent's stored breadcrumbs in the period, ascending, exactly as stored
 *                     (agent_pk, index, timestamp, data_to_sign, signature, block_hash)
 *   anchor            the stored block just before the first period block (null when the period starts
 *                     the chain, or holds no block), so the first block's prev_hash can be checked
 *   epochs            the signed AgentEpoch records of every epoch holding a period block, by epoch_index
 *   inclusion_proofs  one per period block inside an epoch: { block_index, epoch_index, leaf_index,
 *                     tree_size, proof: hex[] }, an RFC 9162 audit path from the leaf of the block's
 *                     block_hash to the epoch's merkle_root
 *   unsealed_blocks   indexes of period blocks not in any epoch yet (ascending)
 *   delegation_chain  the delegation certificates, root (the human) first, or null when unknown
 *   trust             { trust_score, current_tier } or null
 *   violations        the agent's violation records in the period (docs/protocol.md §2.8)
 *   regulatory_basis  [{ framework, article, title, how }]: how the bundle serves EU AI Act art. 12 and 14
 *   server_pk         the key of the server that assembled the bundle
 *   signature         Ed25519 by server_pk over the UTF-8 of JCS of every field above
 *
 * Trust model: the server signature only says which server assembled the bundle and that nothing changed
 * since; the evidence stands on the agent's own signatures (blocks, epochs) and the principals' (chain),
 * which verifyAuditBundle checks one by one. A server that edits a block and re-signs the bundle is caught
 * by the block checks, not by the bundle signature.
 */
import { z } from 'zod';
import { agentEpochSchema, verifyAgentEpoch } from './agent-epoch.js';
import { breadcrumbBlockHash, parseStoredBreadcrumb, storedBreadcrumbSchema, verifyChain } from './breadcrumb.js';
import type { AgentEpoch, Breadcrumb, StoredBreadcrumb, Violation } from './breadcrumb-types.js';
import { CanonicalJsonError, canonicalJson } from './canonical-json.js';
import {
  certificateHash,
  facetGranted,
  linkTimeIssue,
  parseDelegationChain,
  verifyDelegationChainStructure,
  type DelegationCertificate,
} from './delegation-cert.js';
import { cellCoveredBy } from './h3-cell.js';
import { bytesToHex, hexToBytes } from './hex.js';
import { signMessage, verifySignature, type KeyPair } from './identity.js';
import { MerkleError, inclusionProofFromLevels, verifyInclusion } from './merkle/inclusion.js';
import { leafHashFromHex, merkleLevels } from './merkle/tree.js';

export const AUDIT_BUNDLE_VERSION = 1;

export interface AuditInclusionProof {
  block_index: number;
  epoch_index: number;
  /** block_index - the epoch's start_block. */
  leaf_index: number;
  /** The epoch's block_count. */
  tree_size: number;
  /** Sibling hashes, leaf level first (64 hex each). */
  proof: string[];
}

export interface RegulatoryBasis {
  framework: string;
  article: string;
  title: string;
  how: string;
}

export interface AuditTrust {
  trust_score: number;
  current_tier: string;
}

export interface AuditBundle {
  bundle_version: 1;
  generated_at: string;
  agent_pk: string;
  period: { from: string; to: string };
  report: unknown;
  report_error: string | null;
  blocks: StoredBreadcrumb[];
  anchor: StoredBreadcrumb | null;
  epochs: AgentEpoch[];
  inclusion_proofs: AuditInclusionProof[];
  unsealed_blocks: number[];
  delegation_chain: DelegationCertificate[] | null;
  trust: AuditTrust | null;
  violations: Violation[];
  regulatory_basis: RegulatoryBasis[];
  server_pk: string;
  signature: string;
}

export interface AuditBundleInput {
  /** Milliseconds since the epoch; core reads no clock. */
  generatedAtMs: number;
  agentPk: string;
  period: { from: string; to: string };
  /** The compliance report JSON as fetched, or null when it could not be fetched. */
  report: unknown;
  /** Why `report` is null. */
  report_error?: string | null;
  /** The agent's blocks in the period, ascending. */
  blocks: readonly StoredBreadcrumb[];
  /** The block just before the period (null when the period starts the chain). */
  anchor: StoredBreadcrumb | null;
  /** Every epoch holding a period block, with the block_hash of each of its blocks in index order. */
  epochs: readonly { epoch: AgentEpoch; blockHashes: readonly string[] }[];
  /** Root first, when known. */
  chain: readonly DelegationCertificate[] | null;
  trust: AuditTrust | null;
  violations: readonly Violation[];
}

/** How the bundle serves the EU AI Act's logging and oversight duties (what an auditor reads first). */
export const AUDIT_REGULATORY_BASIS: readonly RegulatoryBasis[] = Object.freeze([
  Object.freeze({
    framework: 'EU AI Act',
    article: 'Art. 12',
    title: 'Record-keeping',
    how:
      'Every tool call of the agent is logged automatically as a breadcrumb signed with the agent key ' +
      '(time, H3 cell, tool, facet, digests of arguments and result, outcome) and hash-chained to the ' +
      'previous one; breadcrumbs are sealed into signed RFC 9162 Merkle epochs. The bundle carries the ' +
      'blocks, the epochs and an inclusion proof per sealed block, so any edit, gap, reordering or ' +
      'deletion is detectable offline, and each recorded event stays traceable for the whole period.',
  }),
  Object.freeze({
    framework: 'EU AI Act',
    article: 'Art. 14',
    title: 'Human oversight',
    how:
      'The agent acts only under a delegation certificate chain signed back to a human principal, who ' +
      'limits where (H3 cells), what (facets, allowed and denied tools), how often (max_ops_per_hour) and ' +
      'when (validity window) it may act, and may require signed human approval per call. Calls outside ' +
      'these limits are blocked before they run and recorded as violations; each breadcrumb names the ' +
      'certificate (delegation_cert_hash) it ran under.',
  }),
]);

const hex64 = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex');
const count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
// Longer than any audit path of a safe-integer tree: bounds work on a hostile bundle.
const MAX_PROOF_HASHES = 64;

const auditBundleSchema = z.strictObject({
  bundle_version: z.literal(AUDIT_BUNDLE_VERSION),
  generated_at: z.iso.datetime(),
  agent_pk: hex64,
  period: z.strictObject({ from: z.iso.datetime({ offset: true }), to: z.iso.datetime({ offset: true }) }),
  report: z.unknown().refine((v) => v !== undefined, 'is required (null when missing)'),
  report_error: z.string().nullable(),
  blocks: z.array(storedBreadcrumbSchema),
  anchor: storedBreadcrumbSchema.nullable(),
  epochs: z.array(agentEpochSchema),
  inclusion_proofs: z.array(
    z.strictObject({
      block_index: count,
      epoch_index: count,
      leaf_index: count,
      tree_size: count.min(1),
      proof: z.array(hex64).max(MAX_PROOF_HASHES),
    }),
  ),
  unsealed_blocks: z.array(count),
  // Certificates are judged by parseDelegationChain, whose reasons name the link.
  delegation_chain: z.array(z.unknown()).nullable(),
  trust: z.strictObject({ trust_score: z.number().min(0).max(100), current_tier: z.string().min(1) }).nullable(),
  violations: z.array(z.record(z.string(), z.unknown())),
  regulatory_basis: z.array(
    z.strictObject({ framework: z.string(), article: z.string(), title: z.string(), how: z.string() }),
  ),
  server_pk: hex64,
  signature: z.string().regex(/^[0-9a-f]{128}$/, 'must be 128 lowercase hex'),
});

type ParsedBundle = z.output<typeof auditBundleSchema>;

/** Plain JSON data: what the bundle will be after any transport, so the signature survives it. */
const jsonCopy = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

const copyBlock = (b: StoredBreadcrumb): StoredBreadcrumb => ({
  agent_pk: b.agent_pk,
  index: b.index,
  timestamp: b.timestamp,
  data_to_sign: b.data_to_sign,
  signature: b.signature,
  block_hash: b.block_hash,
});

const copyEpoch = (e: AgentEpoch): AgentEpoch => ({
  version: e.version,
  agent_pk: e.agent_pk,
  epoch_index: e.epoch_index,
  start_block: e.start_block,
  end_block: e.end_block,
  block_count: e.block_count,
  merkle_root: e.merkle_root,
  prev_epoch_hash: e.prev_epoch_hash,
  tier_at_close: e.tier_at_close,
  rolled_at: e.rolled_at,
  epoch_hash: e.epoch_hash,
  signature: e.signature,
});

/** ISO 8601 UTC of a time given in any form Date.parse reads (a date-only "2026-03-01" is its UTC midnight). */
function isoTime(text: string, what: string): string {
  const ms = typeof text === 'string' ? Date.parse(text) : Number.NaN;
  if (!Number.isFinite(ms))
    throw new TypeError(`cannot build audit bundle: ${what} is not a time: ${JSON.stringify(text)}`);
  return new Date(ms).toISOString();
}

/** The message of the server signature: JCS of the bundle without `signature`. */
export function auditBundleSigningString(bundle: Omit<AuditBundle, 'signature'> | AuditBundle): string {
  const { signature: _signature, ...unsigned } = bundle as AuditBundle;
  return canonicalJson(unsigned);
}

/**
 * Assembles and signs the bundle. Faithful, not judging: blocks, epochs and certificates are copied as
 * given (store-only fields dropped) and proofs computed from the given block hashes, so inconsistent store
 * data yields a bundle that fails verification rather than a silently repaired one. Throws TypeError when
 * a proof cannot be computed (an epoch's blockHashes not block_count hashes of 64 hex) or the result would
 * not be a well-formed bundle.
 */
export function buildAuditBundle(input: AuditBundleInput, server: KeyPair): AuditBundle {
  const blocks = input.blocks.map(copyBlock);
  const epochs = [...input.epochs].sort((a, b) => a.epoch.epoch_index - b.epoch.epoch_index);

  const proofs: AuditInclusionProof[] = [];
  const proven = new Set<number>();
  for (const { epoch, blockHashes } of epochs) {
    const label = `epoch ${epoch.epoch_index}`;
    if (blockHashes.length !== epoch.block_count) {
      throw new TypeError(
        `cannot build audit bundle: ${label} has ${epoch.block_count} blocks, ${blockHashes.length} hashes given`,
      );
    }
    const inEpoch = blocks.filter(
      (b) => b.index >= epoch.start_block && b.index <= epoch.end_block && !proven.has(b.index),
    );
    if (inEpoch.length === 0) continue;
    let levels: Uint8Array[];
    try {
      levels = merkleLevels(blockHashes.map((h) => leafHashFromHex(h)));
    } catch {
      throw new TypeError(`cannot build audit bundle: ${label} has a block hash that is not 64 lowercase hex`);
    }
    for (const block of inEpoch) {
      const leaf = block.index - epoch.start_block;
      proofs.push({
        block_index: block.index,
        epoch_index: epoch.epoch_index,
        leaf_index: leaf,
        tree_size: epoch.block_count,
        proof: inclusionProofFromLevels(levels, leaf).map(bytesToHex),
      });
      proven.add(block.index);
    }
  }
  proofs.sort((a, b) => a.block_index - b.block_index);

  const unsigned: Omit<AuditBundle, 'signature'> = {
    bundle_version: 1,
    generated_at: new Date(input.generatedAtMs).toISOString(),
    agent_pk: input.agentPk,
    period: { from: isoTime(input.period.from, 'period.from'), to: isoTime(input.period.to, 'period.to') },
    report: input.report === null || input.report === undefined ? null : jsonCopy(input.report),
    report_error:
      input.report === null || input.report === undefined ? (input.report_error ?? 'report unavailable') : null,
    blocks,
    anchor: input.anchor === null ? null : copyBlock(input.anchor),
    epochs: epochs.map(({ epoch }) => copyEpoch(epoch)),
    inclusion_proofs: proofs,
    unsealed_blocks: blocks.filter((b) => !proven.has(b.index)).map((b) => b.index),
    delegation_chain: input.chain === null ? null : jsonCopy([...input.chain]),
    trust:
      input.trust === null ? null : { trust_score: input.trust.trust_score, current_tier: input.trust.current_tier },
    violations: jsonCopy([...input.violations]),
    regulatory_basis: AUDIT_REGULATORY_BASIS.map((basis) => ({ ...basis })),
    server_pk: server.publicKey,
  };
  const bundle: AuditBundle = {
    ...unsigned,
    signature: signMessage(server.secretKey, auditBundleSigningString(unsigned)),
  };
  const checked = auditBundleSchema.safeParse(bundle);
  if (!checked.success) throw new TypeError(`cannot build audit bundle: ${describeIssues(checked.error, 1)}`);
  return bundle;
}

export interface AuditCheckResult {
  name: string;
  ok: boolean;
  /** Why it failed (its errors), or what it established. */
  detail?: string;
}

export interface AuditBundleVerification {
  /** True when no check failed; warnings do not make a bundle invalid. */
  valid: boolean;
  checks: AuditCheckResult[];
  /** Every failure, each a sentence naming what is at fault. */
  errors: string[];
  /** What an auditor should know but does not break the evidence (unsealed blocks, missing report …). */
  warnings: string[];
}

export interface VerifyAuditBundleOptions {
  /** When given, a delegation chain no longer (or not yet) active at this time is a warning. */
  nowMs?: number;
  /**
   * The server key the auditor expects. Without it the signature only proves the bundle is unchanged since
   * some key signed it (a bundle re-signed by anyone passes that check; the agent's signatures still hold).
   */
  serverPk?: string;
}

function describeIssues(error: z.ZodError, max: number): string {
  const shown = error.issues
    .slice(0, max)
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : 'bundle'}: ${issue.message}`);
  const more = error.issues.length - shown.length;
  return shown.join('; ') + (more > 0 ? `; and ${more} more` : '');
}

/** Collects each named check's errors and warnings, in order. */
class Verdict {
  readonly checks: AuditCheckResult[] = [];
  readonly errors: string[] = [];
  readonly warnings: string[] = [];

  check(name: string, errors: readonly string[], warnings: readonly string[] = [], established?: string): void {
    this.errors.push(...errors);
    this.warnings.push(...warnings);
    const detail = errors.length > 0 ? summarise(errors) : warnings.length > 0 ? summarise(warnings) : established;
    this.checks.push({ name, ok: errors.length === 0, ...(detail === undefined ? {} : { detail }) });
  }

  result(): AuditBundleVerification {
    return { valid: this.errors.length === 0, checks: this.checks, errors: this.errors, warnings: this.warnings };
  }
}

function summarise(lines: readonly string[]): string {
  const head = lines.slice(0, 3).join('; ');
  return lines.length > 3 ? `${head}; and ${lines.length - 3} more` : head;
}

/** Ranges of consecutive indexes ("3..7, 9"), for short messages about many blocks. */
function ranges(indexes: readonly number[]): string {
  const out: string[] = [];
  for (let i = 0; i < indexes.length; i++) {
    const start = indexes[i] as number;
    let end = start;
    while (indexes[i + 1] === end + 1) end = indexes[++i] as number;
    out.push(start === end ? `${start}` : `${start}..${end}`);
  }
  return out.join(', ');
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** "block 3 is" or "blocks 3..5, 9 are": messages about any number of blocks. */
const blocksThat = (indexes: readonly number[], one: string, many: string): string =>
  indexes.length === 1 ? `block ${indexes[0]} ${one}` : `blocks ${ranges(indexes)} ${many}`;

/**
 * Verifies a bundle offline, recomputing everything; no network, no clock (pass `nowMs` to be told about
 * an expired chain). Checks, each reported by name:
 *
 *   bundle_shape          the version 1 shape (zod); nothing else is judged without it
 *   server_signature      server_pk's signature over JCS of the bundle without `signature`; server_pk
 *                         is the expected key when `serverPk` is given
 *   block_chain           docs/protocol.md §2.8's five checks per block (verifyChain, joined to the anchor), every block
 *                         the bundle's agent's; the anchor's own signature and block_hash
 *   period                the blocks' timestamps lie within the period; the anchor is not after its start
 *   epochs                each epoch's shape, epoch_hash and agent signature (verifyAgentEpoch), its agent,
 *                         consecutive indexes linked by prev_epoch_hash, no overlapping ranges; an epoch
 *                         whose blocks all travel in the bundle is also checked against them
 *   inclusion_proofs      each proof takes its block's block_hash to its epoch's merkle_root, at leaf
 *                         block_index - start_block in a tree of block_count leaves
 *   sealing               every block is proven or listed unsealed, never both, and an unsealed block lies
 *                         after every epoch; unsealed blocks are a warning
 *   delegation_chain      certificates' shape, signatures, linkage and narrowing (structural: expiry at
 *                         `nowMs` is not required of an old bundle), ending at the bundle's agent; a
 *                         missing chain is a warning
 *   delegation_cert_hash  every block names the last link's cert_hash
 *   delegation_scope      warnings only: a call that ran (outcome ok or error) outside the last link's
 *                         window, cells or facets, judged at the block's own time. It is a finding about the
 *                         agent, not a defect of the evidence (pre-flight should have blocked it).
 *   report                a present report names the bundle's agent (and, else a warning, its period);
 *                         a missing one is a warning
 *   violations            every violation record is the bundle's agent's
 *
 * Any changed byte that matters breaks the server signature; edits the server re-signed break the
 * agent's or the principals' signatures, or a hash link.
 */
export function verifyAuditBundle(bundle: unknown, options: VerifyAuditBundleOptions = {}): AuditBundleVerification {
  const verdict = new Verdict();
  const shape = auditBundleSchema.safeParse(bundle);
  if (!shape.success) {
    verdict.check('bundle_shape', [`the bundle is not a version 1 audit bundle: ${describeIssues(shape.error, 5)}`]);
    return verdict.result();
  }
  const b = shape.data;
  verdict.check('bundle_shape', [], [], 'version 1');

  checkServerSignature(verdict, bundle as AuditBundle, options.serverPk);
  const parsedBlocks = checkBlockChain(verdict, b);
  checkPeriod(verdict, b);
  checkEpochs(verdict, b);
  const proven = checkInclusionProofs(verdict, b);
  checkSealing(verdict, b, proven);
  checkDelegation(verdict, b, parsedBlocks, options.nowMs);
  checkReport(verdict, b);
  checkViolations(verdict, b);
  return verdict.result();
}

function checkServerSignature(verdict: Verdict, raw: AuditBundle, expected: string | undefined): void {
  // Over the bundle as received (not the zod output), so no parsing default can change the message.
  let message: string;
  try {
    message = auditBundleSigningString(raw);
  } catch (error) {
    if (!(error instanceof CanonicalJsonError)) throw error;
    verdict.check('server_signature', [`the bundle is not representable as canonical JSON: ${error.message}`]);
    return;
  }
  const errors: string[] = [];
  if (!verifySignature(raw.server_pk, message, raw.signature)) {
    errors.push('the server signature does not verify under server_pk: the bundle was altered after signing');
  }
  if (expected !== undefined && raw.server_pk !== expected) {
    errors.push(`the bundle is signed by ${raw.server_pk}, not the expected server ${expected}`);
  }
  verdict.check('server_signature', errors, [], `signed by ${raw.server_pk}`);
}

function checkBlockChain(verdict: Verdict, b: ParsedBundle): Breadcrumb[] {
  const parsedBlocks: Breadcrumb[] = [];
  const chain = verifyChain(b.blocks, { anchor: b.anchor, agentPk: b.agent_pk, parsedBlocks });
  const errors = [...chain.issues];
  if (b.anchor !== null) {
    const label = `anchor block ${b.anchor.index}`;
    const anchor = parseStoredBreadcrumb(b.anchor);
    if (!anchor.ok) errors.push(`${label}: ${anchor.detail}`);
    else if (anchor.value.identity !== b.agent_pk) errors.push(`${label}: belongs to ${anchor.value.identity}`);
    if (!verifySignature(b.anchor.agent_pk, b.anchor.data_to_sign, b.anchor.signature)) {
      errors.push(`${label}: Ed25519 signature does not verify`);
    }
    if (breadcrumbBlockHash(b.anchor.data_to_sign, b.anchor.signature) !== b.anchor.block_hash) {
      errors.push(`${label}: block_hash does not match its signed data`);
    }
  }
  const first = b.blocks[0];
  const last = b.blocks[b.blocks.length - 1];
  verdict.check(
    'block_chain',
    errors,
    [],
    first === undefined || last === undefined
      ? 'no blocks in the period'
      : `${plural(b.blocks.length, 'block')}, ${first.index}..${last.index}${b.anchor === null ? '' : `, anchored at block ${b.anchor.index}`}`,
  );
  return parsedBlocks;
}

function checkPeriod(verdict: Verdict, b: ParsedBundle): void {
  const from = Date.parse(b.period.from);
  const to = Date.parse(b.period.to);
  const errors: string[] = [];
  if (from > to) errors.push(`the period starts (${b.period.from}) after it ends (${b.period.to})`);
  const outside = b.blocks.filter((block) => {
    const t = Date.parse(block.timestamp);
    return !(t >= from && t <= to);
  });
  if (outside.length > 0) {
    errors.push(
      `${blocksThat(
        outside.map((block) => block.index),
        'lies',
        'lie',
      )} outside the period ${b.period.from} to ${b.period.to}`,
    );
  }
  if (b.anchor !== null && Date.parse(b.anchor.timestamp) > from) {
    errors.push(`the anchor block ${b.anchor.index} (${b.anchor.timestamp}) is not before the period's start`);
  }
  verdict.check('period', errors, [], `${b.period.from} to ${b.period.to}`);
}

function checkEpochs(verdict: Verdict, b: ParsedBundle): void {
  const errors: string[] = [];
  const epochs = [...b.epochs].sort((x, y) => x.epoch_index - y.epoch_index);
  const byIndex = new Map(epochs.map((e) => [e.epoch_index, e]));
  for (let i = 0; i < epochs.length; i++) {
    const epoch = epochs[i] as AgentEpoch;
    const label = `epoch ${epoch.epoch_index}`;
    const before = epochs[i - 1];
    if (before !== undefined) {
      if (before.epoch_index === epoch.epoch_index) {
        errors.push(`${label} appears twice`);
        continue;
      }
      if (epoch.epoch_index !== before.epoch_index + 1) {
        errors.push(
          `epochs ${before.epoch_index + 1}..${epoch.epoch_index - 1} are missing between the bundle's epochs`,
        );
      }
      if (epoch.start_block <= before.end_block) errors.push(`${label} overlaps epoch ${before.epoch_index}'s blocks`);
    }
    if (epoch.agent_pk !== b.agent_pk) errors.push(`${label} belongs to ${epoch.agent_pk}, not the bundle's agent`);
    // The link is checked when the previous epoch travels too (or this is the first epoch).
    const previous = epoch.epoch_index === 0 ? null : byIndex.get(epoch.epoch_index - 1);
    const covered = b.blocks.filter((block) => block.index >= epoch.start_block && block.index <= epoch.end_block);
    const complete = covered.length === epoch.block_count;
    const result = verifyAgentEpoch(epoch, complete ? covered : [], previous);
    // With no blocks given, the only failure left after hash, signature and link is the coverage count.
    if (!result.ok && (complete || result.error !== 'seal_mismatch')) errors.push(result.detail);
  }
  verdict.check(
    'epochs',
    errors,
    [],
    epochs.length === 0
      ? 'no epochs'
      : `${plural(epochs.length, 'epoch')}: ${epochs.map((e) => e.epoch_index).join(', ')}`,
  );
}

function checkInclusionProofs(verdict: Verdict, b: ParsedBundle): Set<number> {
  const errors: string[] = [];
  const proven = new Set<number>();
  const blocks = new Map(b.blocks.map((block) => [block.index, block]));
  const epochs = new Map(b.epochs.map((e) => [e.epoch_index, e]));
  for (const p of b.inclusion_proofs) {
    const label = `inclusion proof of block ${p.block_index} in epoch ${p.epoch_index}`;
    const block = blocks.get(p.block_index);
    const epoch = epochs.get(p.epoch_index);
    if (block === undefined) {
      errors.push(`${label}: the bundle has no block ${p.block_index}`);
      continue;
    }
    if (epoch === undefined) {
      errors.push(`${label}: the bundle has no epoch ${p.epoch_index}`);
      continue;
    }
    if (proven.has(p.block_index)) {
      errors.push(`${label}: block ${p.block_index} has more than one proof`);
      continue;
    }
    if (p.block_index < epoch.start_block || p.block_index > epoch.end_block) {
      errors.push(`${label}: the epoch covers blocks ${epoch.start_block}..${epoch.end_block}`);
      continue;
    }
    if (p.leaf_index !== p.block_index - epoch.start_block || p.tree_size !== epoch.block_count) {
      errors.push(
        `${label}: leaf ${p.leaf_index} of ${p.tree_size} should be leaf ${p.block_index - epoch.start_block} of ${epoch.block_count}`,
      );
      continue;
    }
    try {
      verifyInclusion(
        p.leaf_index,
        p.tree_size,
        leafHashFromHex(block.block_hash),
        p.proof.map(hexToBytes),
        hexToBytes(epoch.merkle_root),
      );
      proven.add(p.block_index);
    } catch (error) {
      if (!(error instanceof MerkleError)) throw error;
      errors.push(`${label}: ${error.reason} (the block is not under the epoch's merkle_root)`);
    }
  }
  verdict.check(
    'inclusion_proofs',
    errors,
    [],
    `${plural(proven.size, 'block')} proven in ${proven.size === 1 ? 'its epoch' : 'their epochs'}`,
  );
  return proven;
}

function checkSealing(verdict: Verdict, b: ParsedBundle, proven: ReadonlySet<number>): void {
  const errors: string[] = [];
  const warnings: string[] = [];
  const periodBlocks = new Set(b.blocks.map((block) => block.index));
  const listed = new Set(b.unsealed_blocks);
  const claimed = new Set(b.inclusion_proofs.map((p) => p.block_index));
  const lastSealed = Math.max(-1, ...b.epochs.map((e) => e.end_block));

  const strays = b.unsealed_blocks.filter((i) => !periodBlocks.has(i));
  if (strays.length > 0)
    errors.push(`unsealed_blocks lists ${blocksThat(strays, 'that is', 'that are')} not in the bundle`);
  const both = b.unsealed_blocks.filter((i) => claimed.has(i));
  if (both.length > 0) errors.push(`${blocksThat(both, 'is', 'are')} listed unsealed and proven in an epoch`);
  const sealedAfter = b.unsealed_blocks.filter((i) => i <= lastSealed);
  if (sealedAfter.length > 0) {
    errors.push(
      `${blocksThat(sealedAfter, 'is', 'are')} listed unsealed, but the bundle's epochs reach block ${lastSealed}`,
    );
  }
  const unaccounted = b.blocks.map((block) => block.index).filter((i) => !claimed.has(i) && !listed.has(i));
  if (unaccounted.length > 0) {
    errors.push(`${blocksThat(unaccounted, 'has', 'have')} neither an inclusion proof nor an unsealed listing`);
  }
  const unsealed = b.blocks.map((block) => block.index).filter((i) => listed.has(i) && !claimed.has(i));
  if (unsealed.length > 0) {
    warnings.push(
      `${blocksThat(unsealed, 'is', 'are')} not sealed in an epoch yet: they rest on the agent's signatures and hash links only`,
    );
  }
  verdict.check('sealing', errors, warnings, `${proven.size} of ${b.blocks.length} blocks sealed`);
}

function checkDelegation(
  verdict: Verdict,
  b: ParsedBundle,
  parsedBlocks: readonly Breadcrumb[],
  nowMs: number | undefined,
): void {
  if (b.delegation_chain === null) {
    verdict.check(
      'delegation_chain',
      [],
      ['the bundle carries no delegation chain: the blocks cannot be traced to a human principal'],
    );
    return;
  }
  const parsed = parseDelegationChain(b.delegation_chain);
  const structure = parsed.ok ? verifyDelegationChainStructure(parsed.value) : parsed;
  if (!parsed.ok || !structure.ok) {
    const detail = structure.ok ? 'malformed' : structure.detail;
    verdict.check('delegation_chain', [`the delegation chain does not verify: ${detail}`]);
    return;
  }
  const chain = parsed.value;
  const grant = structure.value;
  const last = chain[chain.length - 1] as DelegationCertificate;
  const chainErrors: string[] = [];
  const chainWarnings: string[] = [];
  if (grant.agent_pk !== b.agent_pk) {
    chainErrors.push(`the delegation chain ends at ${grant.agent_pk}, not the bundle's agent ${b.agent_pk}`);
  }
  if (nowMs !== undefined) {
    const issue = chain.map((link, i) => linkTimeIssue(link, i, nowMs, 0)).find((x) => x !== undefined);
    if (issue !== undefined) {
      chainWarnings.push(`the delegation chain is not active at ${new Date(nowMs).toISOString()}: ${issue}`);
    }
  }
  verdict.check(
    'delegation_chain',
    chainErrors,
    chainWarnings,
    `${plural(chain.length, 'link')} from the human ${grant.human_principal_pk}`,
  );

  const certHash = certificateHash(last);
  const mismatched = parsedBlocks.filter((block) => block.delegation_cert_hash !== certHash).map((x) => x.index);
  verdict.check(
    'delegation_cert_hash',
    mismatched.length === 0
      ? []
      : [
          `${blocksThat(mismatched, 'names', 'name')} another delegation certificate than the chain's last link (${certHash})`,
        ],
    [],
    `every block names ${certHash}`,
  );

  // Judged at each block's own time: an old bundle stays valid after its certificate expired.
  const notBefore = Date.parse(grant.not_before);
  const notAfter = Date.parse(grant.not_after);
  const scope: string[] = [];
  for (const block of parsedBlocks) {
    if (block.context.outcome === 'blocked') continue;
    const t = Date.parse(block.timestamp);
    if (!(t >= notBefore && t <= notAfter)) {
      scope.push(`block ${block.index} ran at ${block.timestamp}, outside the delegation window`);
    }
    if (!cellCoveredBy(grant.h3_cells, block.loc_cell)) {
      scope.push(`block ${block.index} ran in cell ${block.loc_cell}, outside the delegated cells`);
    }
    if (!facetGranted(grant.facets, block.facet)) {
      scope.push(`block ${block.index} used facet "${block.facet}", which is not delegated`);
    }
  }
  verdict.check('delegation_scope', [], scope, 'every call that ran was inside the delegation');
}

function checkReport(verdict: Verdict, b: ParsedBundle): void {
  if (b.report === null) {
    verdict.check('report', [], [`the bundle carries no compliance report: ${b.report_error ?? 'no reason given'}`]);
    return;
  }
  if (typeof b.report !== 'object' || Array.isArray(b.report)) {
    verdict.check('report', ['the report is not a compliance report object']);
    return;
  }
  const report = b.report as { agent_pk?: unknown; reporting_period?: { from?: unknown; to?: unknown } };
  const errors: string[] = [];
  const warnings: string[] = [];
  if (report.agent_pk !== b.agent_pk) {
    errors.push(`the report is about agent ${JSON.stringify(report.agent_pk)}, not the bundle's agent ${b.agent_pk}`);
  }
  const period = report.reporting_period;
  const same = (a: unknown, c: string) => typeof a === 'string' && Date.parse(a) === Date.parse(c);
  if (!same(period?.from, b.period.from) || !same(period?.to, b.period.to)) {
    warnings.push("the report's reporting_period differs from the bundle's period");
  }
  if (b.report_error !== null) warnings.push(`report_error is set next to a report: ${b.report_error}`);
  verdict.check('report', errors, warnings, `about agent ${b.agent_pk}`);
}

function checkViolations(verdict: Verdict, b: ParsedBundle): void {
  const foreign = b.violations.filter((v) => v.agent_pk !== b.agent_pk).length;
  verdict.check(
    'violations',
    foreign === 0 ? [] : [`${plural(foreign, 'violation record')} of another agent than ${b.agent_pk}`],
    [],
    plural(b.violations.length, 'violation record'),
  );
}
