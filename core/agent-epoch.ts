/**
 * Agent epochs (docs/protocol.md §2.8 epoch roll, docs/protocol.md §3 "breadcrumbs unrolled → rolled into a new epoch"): every
 * breadcrumb since the agent's last epoch is rolled into one signed epoch over the RFC 9162 tree of the
 * blocks' block_hash values in index order (leaf = SHA-256(0x00 ‖ block_hash bytes), as the proof store
 * seals records; docs/protocol.md §10). Epochs chain by prev_epoch_hash, 64 zeros before the first.
 */
import { z } from 'zod';
import { canonicalJson } from './canonical-json.js';
import { fail, pass, type Check } from './check.js';
import { sha256Hex } from './hash.js';
import { bytesToHex } from './hex.js';
import { checkPublicKey, signMessage, verifySignature, type KeyPair } from './identity.js';
import { leafHashFromHex, merkleRoot } from './merkle/tree.js';
import { breadcrumbBlockHash } from './breadcrumb.js';
import { describeZodIssue } from './zod-issue.js';
import { TRUST_TIERS, type AgentEpoch, type StoredBreadcrumb, type TrustTier } from './breadcrumb-types.js';

/** prev_epoch_hash of an agent's first epoch. */
export const GENESIS_EPOCH_HASH = '0'.repeat(64);

const hex64 = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex');
const count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

export const agentEpochSchema = z
  .strictObject({
    version: z.literal(1),
    agent_pk: hex64,
    epoch_index: count,
    start_block: count,
    end_block: count,
    block_count: count.min(1),
    merkle_root: hex64,
    prev_epoch_hash: hex64,
    tier_at_close: z.enum(TRUST_TIERS),
    rolled_at: z.iso.datetime(),
    epoch_hash: hex64,
    signature: z.string().regex(/^[0-9a-f]{128}$/, 'must be 128 lowercase hex'),
  })
  .refine((e) => e.end_block - e.start_block + 1 === e.block_count, {
    message: 'is not end_block - start_block + 1',
    path: ['block_count'],
  })
  .refine((e) => (e.epoch_index === 0) === (e.prev_epoch_hash === GENESIS_EPOCH_HASH), {
    message: 'must be 64 zeros exactly for epoch 0',
    path: ['prev_epoch_hash'],
  });

// Compile-time proof that the schema's output is the shared interface.
const _schemaMatchesInterface = (parsed: z.output<typeof agentEpochSchema>): AgentEpoch => parsed;

type UnsignedEpoch = Omit<AgentEpoch, 'epoch_hash' | 'signature'>;

/** SHA-256 hex of JCS of every field except epoch_hash and signature. */
export function agentEpochHash(epoch: UnsignedEpoch | AgentEpoch): string {
  const { epoch_hash: _hash, signature: _signature, ...unsigned } = epoch as AgentEpoch;
  return sha256Hex(canonicalJson(unsigned));
}

/** RFC 9162 root (hex) over the blocks' block_hash values, in the order given. Throws TypeError on a non-hex hash. */
export const blocksMerkleRoot = (blocks: readonly Pick<StoredBreadcrumb, 'block_hash'>[]): string =>
  bytesToHex(merkleRoot(blocks.map((b) => leafHashFromHex(b.block_hash))));

/** The first block index an agent's next epoch must start at: the last epoch's end_block + 1, 0 before any. */
export const nextUnrolledIndex = (previous: AgentEpoch | null): number =>
  previous === null ? 0 : previous.end_block + 1;

/**
 * docs/protocol.md §7's 500 message for a roll with nothing to roll. `lastIndex` is the index the next block would
 * have, i.e. nextUnrolledIndex(previous epoch): "no blocks … since block_index 42" reads as "block 42
 * and after do not exist yet", and 0 for an agent that never rolled says the same about the whole chain.
 */
export const noBlocksToRollMessage = (lastIndex: number): string =>
  `EPOCH: no blocks to roll since block_index ${lastIndex}`;

/**
 * Rolls `blocks` (every block since the previous epoch, ascending, contiguous, the agent's own) into the
 * next epoch, signed by the agent. Throws RangeError when `blocks` is empty (the caller answers with
 * noBlocksToRollMessage) and TypeError when the blocks do not continue the previous epoch without a gap
 * or belong to another agent: such an epoch would never verify.
 */
export function rollAgentEpoch(input: {
  agent: KeyPair;
  blocks: readonly StoredBreadcrumb[];
  previous: AgentEpoch | null;
  tier: TrustTier;
  nowMs: number;
}): AgentEpoch {
  const { agent, blocks, previous } = input;
  const first = blocks[0];
  const last = blocks[blocks.length - 1];
  if (first === undefined || last === undefined)
    throw new RangeError(noBlocksToRollMessage(nextUnrolledIndex(previous)));
  if (previous !== null && previous.agent_pk !== agent.publicKey) {
    throw new TypeError(`cannot roll: the previous epoch belongs to ${previous.agent_pk}`);
  }
  const expectedStart = nextUnrolledIndex(previous);
  if (first.index !== expectedStart) {
    throw new TypeError(
      `cannot roll: the blocks start at index ${first.index}, the epoch must start at ${expectedStart}`,
    );
  }
  for (let i = 0; i < blocks.length; i++) {
    const block = blocks[i] as StoredBreadcrumb;
    if (block.agent_pk !== agent.publicKey)
      throw new TypeError(`cannot roll: block ${block.index} belongs to ${block.agent_pk}`);
    if (block.index !== expectedStart + i) {
      throw new TypeError(`cannot roll: expected block ${expectedStart + i}, got block ${block.index}`);
    }
  }
  const unsigned: UnsignedEpoch = {
    version: 1,
    agent_pk: agent.publicKey,
    epoch_index: previous === null ? 0 : previous.epoch_index + 1,
    start_block: first.index,
    end_block: last.index,
    block_count: blocks.length,
    merkle_root: blocksMerkleRoot(blocks),
    prev_epoch_hash: previous?.epoch_hash ?? GENESIS_EPOCH_HASH,
    tier_at_close: input.tier,
    rolled_at: new Date(input.nowMs).toISOString(),
  };
  const epoch_hash = agentEpochHash(unsigned);
  const epoch: AgentEpoch = { ...unsigned, epoch_hash, signature: signMessage(agent.secretKey, epoch_hash) };
  const checked = agentEpochSchema.safeParse(epoch);
  if (!checked.success) throw new TypeError(`cannot roll: ${describeZodIssue(checked.error, 'epoch')}`);
  return epoch;
}

/**
 * Checks an epoch and the blocks it claims to cover: shape, epoch_hash, the agent's signature, then
 * coverage (the blocks are start_block..end_block of the agent, each block_hash recomputed from its signed
 * text and signature, and the Merkle root over them). Block signatures and links are verifyChain's job.
 * With `previous` (null for the first epoch) the link is checked too: epoch_index, prev_epoch_hash and a
 * start_block that continues the previous epoch. Failures: `invalid_seal` for the epoch itself,
 * `seal_mismatch` when it does not cover these blocks, each naming the epoch and, where one is at fault, the block.
 */
export function verifyAgentEpoch(
  epoch: AgentEpoch,
  blocks: readonly StoredBreadcrumb[],
  previous?: AgentEpoch | null,
): Check<AgentEpoch> {
  const parsed = agentEpochSchema.safeParse(epoch);
  if (!parsed.success) return fail('invalid_seal', describeZodIssue(parsed.error, 'epoch'));
  const e = parsed.data;
  const label = `epoch ${e.epoch_index}`;
  if (agentEpochHash(e) !== e.epoch_hash) return fail('invalid_seal', `${label}: epoch_hash does not match the epoch`);
  if (!verifySignature(e.agent_pk, e.epoch_hash, e.signature)) {
    const key = checkPublicKey(e.agent_pk);
    return fail('invalid_seal', `${label}: signature does not verify${key.ok ? '' : `: ${key.detail}`}`);
  }
  if (previous !== undefined) {
    const expectedIndex = previous === null ? 0 : previous.epoch_index + 1;
    if (e.epoch_index !== expectedIndex) return fail('invalid_seal', `${label}: expected epoch ${expectedIndex}`);
    if (e.prev_epoch_hash !== (previous?.epoch_hash ?? GENESIS_EPOCH_HASH)) {
      return fail('invalid_seal', `${label}: prev_epoch_hash does not match the previous epoch`);
    }
    if (e.start_block !== nextUnrolledIndex(previous)) {
      return fail('invalid_seal', `${label}: start_block ${e.start_block} does not continue the previous epoch`);
    }
  }

  const mismatch = (detail: string) => fail('seal_mismatch', `${label}: ${detail}`);
  if (blocks.length !== e.block_count) {
    return mismatch(`covers ${e.block_count} blocks (${e.start_block}..${e.end_block}), ${blocks.length} given`);
  }
  for (let i = 0; i < blocks.length; i++) {
    const block = blocks[i] as StoredBreadcrumb;
    if (block.index !== e.start_block + i)
      return mismatch(`expected block ${e.start_block + i}, got block ${block.index}`);
    if (block.agent_pk !== e.agent_pk) return mismatch(`block ${block.index} belongs to ${block.agent_pk}`);
    if (breadcrumbBlockHash(block.data_to_sign, block.signature) !== block.block_hash) {
      return mismatch(`block ${block.index}: block_hash does not match its signed data`);
    }
  }
  let root: string;
  try {
    root = blocksMerkleRoot(blocks);
  } catch {
    return mismatch('a block_hash is not 64 lowercase hex');
  }
  if (root !== e.merkle_root) return mismatch('merkle root over the blocks does not match the epoch');
  return pass(e);
}
