/**
 * Audit breadcrumbs of the perception server (docs/protocol.md §1.9, §2.8; docs/protocol.md §10): one Ed25519-signed,
 * hash-chained block per tool call.
 *
 *   data_to_sign = JCS of exactly the eleven BreadcrumbContent fields
 *   signature    = Ed25519 by `identity` over the UTF-8 of data_to_sign
 *   block_hash   = SHA-256 hex of (data_to_sign + ":" + signature)
 *   prev_hash    = the previous block's block_hash, "genesis" at index 0
 *
 * Threat model: the store is not trusted. A block is stored with the exact text that was signed, and
 * verifyChain judges every block from that text alone, so an edited, re-serialised, reordered, dropped
 * or re-timed block is named in the result. Nothing here reads a clock: timestamps come from the caller.
 */
import * as crypto from 'node:crypto';
import { z } from 'zod';
import { CanonicalJsonError, canonicalJson } from './canonical-json.js';
import { fail, pass, type Check } from './check.js';
import { cellResolution, isCell } from './h3-cell.js';
import { sha256Hex } from './hash.js';
import { verifySignature, signMessage, type KeyPair } from './identity.js';
import { describeZodIssue } from './zod-issue.js';
import type { Breadcrumb, BreadcrumbContent, StoredBreadcrumb } from './breadcrumb-types.js';

const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

/** prev_hash of the block at index 0. */
export const GENESIS_PREV_HASH = 'genesis';

const hex64 = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex');
const hex128 = z.string().regex(/^[0-9a-f]{128}$/, 'must be 128 lowercase hex');
const blockIndex = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
// ISO 8601 UTC ("Z"), any sub-second precision; the writer uses Date#toISOString (milliseconds).
const utcTime = z.iso.datetime();

export const breadcrumbContentSchema = z
  .strictObject({
    index: blockIndex,
    identity: hex64,
    timestamp: utcTime,
    loc_cell: z.string().refine(isCell, 'must be a valid H3 cell (15 lowercase hex)'),
    loc_res: z.number().int().min(0).max(15),
    context: z.strictObject({
      args_hash: hex64,
      result_hash: hex64.nullable(),
      outcome: z.enum(['ok', 'error', 'blocked']),
    }),
    delegation_cert_hash: hex64,
    facet: z.string().min(1),
    meta: z.record(z.string(), z.unknown()),
    prev_hash: z.union([z.literal(GENESIS_PREV_HASH), hex64]),
    tool_name: z.string().min(1),
  })
  .superRefine((content, ctx) => {
    if (cellResolution(content.loc_cell) !== content.loc_res) {
      ctx.addIssue({ code: 'custom', path: ['loc_res'], message: `is not the resolution of loc_cell` });
    }
    if ((content.index === 0) !== (content.prev_hash === GENESIS_PREV_HASH)) {
      ctx.addIssue({
        code: 'custom',
        path: ['prev_hash'],
        message: content.index === 0 ? 'must be "genesis" at index 0' : 'may be "genesis" only at index 0',
      });
    }
  });

export const storedBreadcrumbSchema = z.strictObject({
  agent_pk: hex64,
  index: blockIndex,
  timestamp: utcTime,
  data_to_sign: z.string().min(2),
  signature: hex128,
  block_hash: hex64,
});

// Compile-time proof that the schemas' outputs are the shared interfaces.
const _contentMatchesInterface = (parsed: z.output<typeof breadcrumbContentSchema>): BreadcrumbContent => parsed;
const _storedMatchesInterface = (parsed: z.output<typeof storedBreadcrumbSchema>): StoredBreadcrumb => parsed;

/** JCS of exactly the eleven signed fields (docs/protocol.md §10); any other property of `content` is ignored. */
export function dataToSign(content: BreadcrumbContent): string {
  return canonicalJson({
    context: content.context,
    delegation_cert_hash: content.delegation_cert_hash,
    facet: content.facet,
    identity: content.identity,
    index: content.index,
    loc_cell: content.loc_cell,
    loc_res: content.loc_res,
    meta: content.meta,
    prev_hash: content.prev_hash,
    timestamp: content.timestamp,
    tool_name: content.tool_name,
  });
}

/** block_hash: SHA-256 hex of (data_to_sign + ":" + signature). */
export const breadcrumbBlockHash = (data: string, signature: string): string =>
  // One-shot crypto.hash (Node >= 20.12) where present: half the cost of createHash on a report's 100,000 blocks.
  oneShotHash ? oneShotHash('sha256', `${data}:${signature}`, 'hex') : sha256Hex(`${data}:${signature}`);

/**
 * The call digest of a block's `context`: SHA-256 hex of the JCS of the arguments and of the result
 * (`result_hash` null when there is no result, e.g. a blocked call). Throws CanonicalJsonError when a
 * value is not representable in JSON.
 */
export function breadcrumbContext(
  args: unknown,
  result: unknown,
  outcome: BreadcrumbContent['context']['outcome'],
): BreadcrumbContent['context'] {
  return {
    args_hash: sha256Hex(canonicalJson(args ?? null)),
    result_hash: result === undefined ? null : sha256Hex(canonicalJson(result)),
    outcome,
  };
}

/**
 * Signs a block with the agent's key. Throws TypeError when the content is malformed or claims another
 * identity: such a block could never pass verifyChain, so it is refused before it reaches a store.
 */
export function signBreadcrumb(
  content: BreadcrumbContent,
  agent: KeyPair,
): { block: Breadcrumb; stored: StoredBreadcrumb } {
  if (content.identity !== agent.publicKey) {
    throw new TypeError(
      `cannot sign breadcrumb: identity ${content.identity} is not the signing key ${agent.publicKey}`,
    );
  }
  const checked = breadcrumbContentSchema.safeParse(content);
  if (!checked.success) {
    throw new TypeError(`cannot sign breadcrumb: ${describeZodIssue(checked.error, 'breadcrumb')}`);
  }
  const data = dataToSign(checked.data);
  const signature = signMessage(agent.secretKey, data);
  const block_hash = breadcrumbBlockHash(data, signature);
  return {
    block: { ...checked.data, signature, block_hash },
    stored: {
      agent_pk: content.identity,
      index: content.index,
      timestamp: content.timestamp,
      data_to_sign: data,
      signature,
      block_hash,
    },
  };
}

/**
 * The content of the block after `previous` (the agent's current tip; null before the first block).
 * If the caller's clock went back (fields.timestamp earlier than the tip's), the tip's timestamp is
 * used instead: the chain's timestamps must never decrease (docs/protocol.md §2.8 check 5), and a stalled clock is
 * more honest in an audit log than a refused tool call. The duration and the real order stay visible
 * through the indices.
 */
export function nextBreadcrumb(
  previous: StoredBreadcrumb | null,
  fields: Omit<BreadcrumbContent, 'index' | 'prev_hash'>,
): BreadcrumbContent {
  let timestamp = fields.timestamp;
  if (previous !== null && Date.parse(timestamp) < Date.parse(previous.timestamp)) timestamp = previous.timestamp;
  return {
    ...fields,
    index: previous === null ? 0 : previous.index + 1,
    prev_hash: previous === null ? GENESIS_PREV_HASH : previous.block_hash,
    timestamp,
  };
}

type Parsed = { ok: true; content: BreadcrumbContent } | { ok: false; reason: string };

const HEX64 = /^[0-9a-f]{64}$/;
const TO_ISO_STRING = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const isHex64 = (value: unknown): boolean => typeof value === 'string' && HEX64.test(value);
const isPlainRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * breadcrumbContentSchema's verdict on the ordinary block (what signBreadcrumb writes), without zod: true only
 * where the schema surely accepts `json` and would give back the same content. Anything else goes through the
 * schema, which is the judge (and names the issue).
 */
function plainContent(json: unknown): json is BreadcrumbContent {
  if (!isPlainRecord(json) || Object.keys(json).length !== 11) return false;
  const { index, timestamp, context, meta, prev_hash: prev, loc_cell: cell, loc_res: res } = json;
  if (!isPlainRecord(context) || Object.keys(context).length !== 3) return false;
  if (!isPlainRecord(meta) || Object.prototype.hasOwnProperty.call(meta, '__proto__')) return false;
  const ms = typeof timestamp === 'string' && TO_ISO_STRING.test(timestamp) ? Date.parse(timestamp) : NaN;
  return (
    Number.isSafeInteger(index) &&
    (index as number) >= 0 &&
    isHex64(json.identity) &&
    Number.isFinite(ms) &&
    new Date(ms).toISOString() === timestamp &&
    Number.isInteger(res) &&
    isCell(cell) &&
    cellResolution(cell) === res &&
    isHex64(context.args_hash) &&
    (context.result_hash === null || isHex64(context.result_hash)) &&
    (context.outcome === 'ok' || context.outcome === 'error' || context.outcome === 'blocked') &&
    isHex64(json.delegation_cert_hash) &&
    typeof json.facet === 'string' &&
    json.facet.length > 0 &&
    (index === 0 ? prev === GENESIS_PREV_HASH : isHex64(prev)) &&
    typeof json.tool_name === 'string' &&
    json.tool_name.length > 0
  );
}

/** The signed content of `data`, which must be valid JSON, the block format, and exactly its own JCS. */
function parseSignedText(data: string): Parsed {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    return { ok: false, reason: 'data_to_sign is not valid JSON' };
  }
  let parsed: { success: true; data: BreadcrumbContent } | ReturnType<typeof breadcrumbContentSchema.safeParse>;
  if (plainContent(json)) parsed = { success: true, data: json };
  else parsed = breadcrumbContentSchema.safeParse(json);
  if (!parsed.success) {
    return { ok: false, reason: `data_to_sign is not a breadcrumb: ${describeZodIssue(parsed.error, 'content')}` };
  }
  // A second text for the same content (other whitespace or key order, 1.0 for 1 …) is refused: the
  // signed text must be the one text every verifier would rebuild.
  let canonical: string;
  try {
    canonical = dataToSign(parsed.data);
  } catch (error) {
    // JSON.parse reads 1e400 as Infinity, which JCS cannot write: a tampered block, not a verifier crash.
    if (!(error instanceof CanonicalJsonError)) throw error;
    return { ok: false, reason: `data_to_sign is not canonical JSON: ${error.message}` };
  }
  if (canonical !== data) {
    return { ok: false, reason: 'data_to_sign is not the canonical JSON (JCS) of its content' };
  }
  return { ok: true, content: parsed.data };
}

/** A text that passed parseSignedText before (VerifyChainOptions.checkedTexts): JSON.parse alone, else in full. */
function parseCheckedText(data: string): Parsed {
  try {
    return { ok: true, content: JSON.parse(data) as BreadcrumbContent };
  } catch {
    return parseSignedText(data);
  }
}

/** Where the stored (unsigned, indexed) copies of index, timestamp and agent disagree with the signed ones. */
function storedMismatches(stored: StoredBreadcrumb, content: BreadcrumbContent): string[] {
  const out: string[] = [];
  if (stored.index !== content.index) {
    out.push(`stored index ${stored.index} differs from the signed index ${content.index}`);
  }
  if (stored.timestamp !== content.timestamp) {
    out.push(`stored timestamp ${stored.timestamp} differs from the signed timestamp ${content.timestamp}`);
  }
  if (stored.agent_pk !== content.identity) {
    out.push(`stored agent_pk ${stored.agent_pk} differs from the signed identity ${content.identity}`);
  }
  return out;
}

/**
 * A stored block's content, signature and block_hash. Checks shape, that data_to_sign is the JCS of a
 * valid content, and that the stored index, timestamp and agent_pk are the signed ones; it does not
 * check the signature, the block_hash or the links: run verifyChain for that. Failures are `invalid_record`.
 */
export function parseStoredBreadcrumb(stored: StoredBreadcrumb): Check<Breadcrumb> {
  const shape = storedBreadcrumbSchema.safeParse(stored);
  if (!shape.success) return fail('invalid_record', describeZodIssue(shape.error, 'stored breadcrumb'));
  const label = `block ${shape.data.index}`;
  const parsed = parseSignedText(shape.data.data_to_sign);
  if (!parsed.ok) return fail('invalid_record', `${label}: ${parsed.reason}`);
  const mismatch = storedMismatches(shape.data, parsed.content)[0];
  if (mismatch !== undefined) return fail('invalid_record', `${label}: ${mismatch}`);
  return pass({ ...parsed.content, signature: shape.data.signature, block_hash: shape.data.block_hash });
}

/** docs/protocol.md §2.8 chain_verification, plus the indices of the blocks that have an issue. */
export interface ChainVerification {
  is_valid: boolean;
  block_count: number;
  /** Human-readable, each naming its block ("block 17: …"); empty when valid. */
  issues: string[];
  first_block_at: string | null;
  last_block_at: string | null;
  /** delegation_cert_hash of the last block (of the last block whose content could be read). */
  delegation_cert_hash: string | null;
  /** Stored indices of the blocks with at least one issue, in chain order, each once. */
  invalid_blocks: number[];
}

export interface VerifyChainOptions {
  /**
   * The agent's block just before `blocks` (a report period that starts after genesis), or null when
   * `blocks` starts the chain. The anchor is the join point only: its own checks belong to the period
   * that holds it.
   */
  anchor: StoredBreadcrumb | null;
  /**
   * The agent whose chain this must be. Default: the anchor's agent_pk, else the first block's signed
   * identity (its stored agent_pk when its content cannot be read).
   */
  agentPk?: string;
  /**
   * block_hash values of blocks whose signature already verified (e.g. in an earlier report, or signed by
   * this process). A listed block whose block_hash still recomputes from its data_to_sign and signature
   * skips the Ed25519 check: block_hash commits to both (and data_to_sign to the identity), so SHA-256
   * collision resistance carries the earlier verdict over. Blocks verified now are added; the caller
   * bounds the set's size.
   */
  signatureCache?: Set<string>;
  /**
   * block_hash values of blocks whose signed text already passed every check of its own (JSON, breadcrumb shape,
   * canonical text) in an earlier verification. A listed block whose block_hash still recomputes is read with
   * JSON.parse alone: block_hash commits to the text, so the earlier verdict on it carries over.
   */
  checkedTexts?: { has(blockHash: string): boolean };
  /**
   * A stored index at or below which every block passed all checks earlier (a verified-through mark whose
   * block, with its marked hash, is among `blocks`): such a block whose block_hash still recomputes is treated as
   * listed in both signatureCache and checkedTexts. Its hash, links, index and timestamp are still checked, so a
   * block rewritten since breaks a link up to the marked block; the caller must then verify again without it.
   */
  trustedThrough?: number;
  /**
   * When given, every block whose data_to_sign could be read is appended as a Breadcrumb (signature and
   * block_hash as stored), issues or not, so a report needs no second parse; the result says which are bad.
   */
  parsedBlocks?: Breadcrumb[];
}

/**
 * Verifies one agent's blocks, in the order given (ascending index expected). Per block, docs/protocol.md §2.8's five
 * checks: (1) the Ed25519 signature by `identity` over data_to_sign, (2) block_hash, (3) prev_hash is the
 * preceding block's block_hash ("genesis" at index 0, the anchor's for the first block of a period),
 * (4) no index gap, (5) no timestamp earlier than the preceding one. Besides: data_to_sign is exactly the
 * JCS of its content, the stored index, timestamp and agent_pk are the signed ones, and one identity
 * signs every block. Continuity is judged against the block actually preceding (its stored block_hash
 * and signed index), so one tampered block is named without condemning every later one.
 */
export function verifyChain(blocks: readonly StoredBreadcrumb[], options: VerifyChainOptions): ChainVerification {
  const steps = chainVerifier(blocks, options);
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
  }
}

/** Blocks verifyChain judges between two pauses of chainVerifier. */
export const VERIFY_SLICE_BLOCKS = 256;

/**
 * verifyChain in slices: pauses (yields) after every VERIFY_SLICE_BLOCKS blocks and returns the verdict, so
 * a server can verify a long chain between other work instead of blocking its event loop for seconds.
 */
export function* chainVerifier(
  blocks: readonly StoredBreadcrumb[],
  options: VerifyChainOptions,
): Generator<void, ChainVerification, void> {
  const { anchor, signatureCache: cache } = options;
  const trustedThrough = options.trustedThrough ?? -1;
  const issues: string[] = [];
  const invalid: number[] = [];
  let agent: string | null = options.agentPk ?? anchor?.agent_pk ?? null;

  let prevHash: string | null = anchor?.block_hash ?? null;
  let prevIndex: number | null = anchor?.index ?? null;
  let prevTime: number | null = anchor === null ? null : Date.parse(anchor.timestamp);
  let prevTimestamp: string | null = anchor?.timestamp ?? null;
  let certHash: string | null = null;
  let firstAt: string | null = null;
  let lastAt: string | null = null;

  // The block being judged. Labels and its issue list are built only when it has an issue (most have none), and
  // these helpers are made once, not per block.
  let i = 0;
  let stored = blocks[0] as StoredBreadcrumb;
  let blockIssues: string[] | null = null;
  const issue = (text: string) => (blockIssues ??= []).push(`block ${stored.index}: ${text}`);
  const previousLabel = () => (i === 0 ? `the anchor block ${prevIndex}` : `block ${prevIndex}`);

  for (i = 0; i < blocks.length; i++) {
    if (i > 0 && i % VERIFY_SLICE_BLOCKS === 0) yield;
    stored = blocks[i] as StoredBreadcrumb;
    blockIssues = null;

    // (2) block_hash, computed first so that the text and (1) can use what was verified before.
    const hashMatches =
      typeof stored.data_to_sign === 'string' &&
      breadcrumbBlockHash(stored.data_to_sign, stored.signature) === stored.block_hash;
    const parsed =
      typeof stored.data_to_sign !== 'string'
        ? ({ ok: false, reason: 'data_to_sign is missing' } as const)
        : hashMatches && (stored.index <= trustedThrough || options.checkedTexts?.has(stored.block_hash) === true)
          ? parseCheckedText(stored.data_to_sign)
          : parseSignedText(stored.data_to_sign);
    const content = parsed.ok ? parsed.content : null;
    if (!parsed.ok) issue(parsed.reason);
    agent ??= content?.identity ?? stored.agent_pk;
    if (content !== null) {
      for (const mismatch of storedMismatches(stored, content)) issue(mismatch);
      if (content.identity !== agent) {
        issue(`identity ${content.identity} is not the chain's agent ${agent}`);
      }
      certHash = content.delegation_cert_hash;
      if (options.parsedBlocks !== undefined) {
        // `content` is this call's own parse: completed in place rather than copied (100,000 blocks a report).
        const block = content as Breadcrumb;
        block.signature = stored.signature;
        block.block_hash = stored.block_hash;
        options.parsedBlocks.push(block);
      }
    } else if (stored.agent_pk !== agent) {
      issue(`agent_pk ${stored.agent_pk} is not the chain's agent ${agent}`);
    }

    // (1) signature. Without readable content, the stored agent_pk is the best claim of who signed.
    const signer = content?.identity ?? stored.agent_pk;
    const cached =
      hashMatches &&
      content !== null &&
      (stored.index <= trustedThrough || (cache !== undefined && cache.has(stored.block_hash)));
    if (!cached) {
      if (!verifySignature(signer, stored.data_to_sign, stored.signature)) {
        issue(`Ed25519 signature does not verify under identity ${signer}`);
      } else if (hashMatches && content !== null) {
        cache?.add(stored.block_hash);
      }
    }
    if (!hashMatches) issue('block_hash does not match its signed data');

    const index = content?.index ?? stored.index;
    const timestamp = content?.timestamp ?? stored.timestamp;
    // (3) prev_hash and (4) index continuity.
    if (prevIndex === null) {
      if (index !== 0) {
        issue(`cannot be anchored: the chain starts at index ${index} and the block before it was not given`);
      } else if (content !== null && content.prev_hash !== GENESIS_PREV_HASH) {
        issue('prev_hash must be "genesis" at index 0');
      }
    } else {
      if (index !== prevIndex + 1) issue(`index gap: expected index ${prevIndex + 1} after ${previousLabel()}`);
      if (content !== null && content.prev_hash !== prevHash) {
        issue(`prev_hash does not match ${previousLabel()}'s block_hash`);
      }
    }
    // (5) timestamps never decrease.
    const time = Date.parse(timestamp);
    if (prevTime !== null && !(time >= prevTime)) {
      issue(`timestamp ${timestamp} is earlier than ${previousLabel()}'s ${prevTimestamp}`);
    }

    if (blockIssues !== null) {
      issues.push(...(blockIssues as string[]));
      if (invalid[invalid.length - 1] !== stored.index) invalid.push(stored.index);
    }
    if (i === 0) firstAt = timestamp;
    lastAt = timestamp;
    prevHash = stored.block_hash;
    prevIndex = index;
    if (Number.isFinite(time)) {
      prevTime = time;
      prevTimestamp = timestamp;
    }
  }

  return {
    is_valid: issues.length === 0,
    block_count: blocks.length,
    issues,
    first_block_at: firstAt,
    last_block_at: lastAt,
    delegation_cert_hash: certHash,
    invalid_blocks: invalid,
  };
}
