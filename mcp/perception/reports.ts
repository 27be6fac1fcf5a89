/**
 * The audit views of the perception server, computed live from the store (docs/protocol.md §4.2 "reports are computed
 * live, not cached"), shared by the HTTP routes and the idn_* tools: the compliance report of a period, the
 * trust score, the chain verification, and the epoch roll of the server's own agent.
 *
 * A report loads the agent's blocks with timestamps in the period plus the block just before it (the anchor,
 * so a period that starts after genesis still checks its first link), runs the five docs/protocol.md §2.8 checks, and
 * hands blocks, epochs (rolled in the period), violations and approvals (in the period) to
 * core/compliance-report.ts. Blocks that fail verification are named in chain_verification and count for
 * nothing else (no operations, cells or approvals from an edited block). The trust score and an epoch's
 * tier_at_close judge the whole chain, from totals kept per agent: the first question verifies the whole
 * chain once, later ones verify only the blocks appended since (anchored on the last block already judged)
 * and add them in, so a trust score costs the new blocks, not the chain's length. A block edited in the
 * store after it was judged is not seen by the totals; `idn_verify_chain` and reports verify afresh.
 *
 * Certificates: the store holds chains, not certificates. The server reports its own agent with its own
 * chain; other agents' chains are reported with the certificates it was given (`knownChains`), else with a
 * certificate stub naming the cert_hash their blocks carry (`known: false`; principal unknown, so no
 * approvals can be attributed and none are required).
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import {
  chainVerifier,
  parseStoredBreadcrumb,
  type ChainVerification,
  type VerifyChainOptions,
} from '../../core/breadcrumb.js';
import type { AgentEpoch, Breadcrumb, StoredBreadcrumb, TrustTier } from '../../core/breadcrumb-types.js';
import { nextUnrolledIndex, noBlocksToRollMessage, rollAgentEpoch } from '../../core/agent-epoch.js';
import { buildComplianceReport, type ComplianceReport } from '../../core/compliance-report.js';
import { delegationChainRights, type DelegationCertificate } from '../../core/delegation-cert.js';
import { ServiceError } from '../../core/errors.js';
import type { KeyPair } from '../../core/identity.js';
import { isOwnVerifiedMark, signVerifiedMark } from '../../core/verified-mark.js';
import { requiresHumanApproval } from '../../core/tool-preflight.js';
import {
  EPOCH_ROLL_TOOL,
  isOperation,
  TIER_THRESHOLDS,
  tierFor,
  trustScore,
  type TrustScore,
} from '../../core/trust-score.js';
import type { AuditStore, VerifiedMark } from '../../store/audit-store.js';
import { defaultBlockVerifier, type BlockVerifier } from './block-verifier.js';

/** docs/protocol.md §4.2 default start of a report period. */
export const DEFAULT_REPORT_FROM = '2020-01-01T00:00:00.000Z';

/** A certificate the server cannot show: only what the agent's blocks say about it. */
export interface UnknownCertificate {
  known: false;
  agent_pk: string;
  cert_hash: string | null;
  principal_local: false;
}

export type PerceptionComplianceReport = Omit<ComplianceReport, 'delegation_certificate'> & {
  delegation_certificate: ComplianceReport['delegation_certificate'] | UnknownCertificate;
};

export interface TrustView {
  agent_pk: string;
  trust_score: number;
  current_tier: TrustTier;
  parts: TrustScore['parts'];
  thresholds: Record<TrustTier, number>;
  total_operations: number;
  unique_cells: number;
  first_block_at: string | null;
  chain_valid: boolean;
}

export interface EpochRollResult {
  success: true;
  epoch_index: number;
  block_count: number;
  start_block: number;
  end_block: number;
  merkle_root: string;
  tier_at_close: TrustTier;
  epoch_hash: string;
}

export type EpochRoll = { ok: true; value: EpochRollResult; epoch: AgentEpoch } | { ok: false; message: string };

export interface ReportService {
  /** Throws ServiceError('agent_not_found') for an agent that is neither this server's nor in the store. */
  report(agentPk: string, period: { from: string; to: string }): Promise<PerceptionComplianceReport>;
  trust(agentPk: string): Promise<TrustView>;
  /** The agent's whole chain, block by block. */
  verifyChain(agentPk: string): Promise<ChainVerification>;
  /** Rolls every block of the server's agent since its last epoch; `ok: false` with docs/protocol.md §7's message when none. */
  rollEpoch(): Promise<EpochRoll>;
}

export interface ReportServiceDeps {
  store: AuditStore;
  clock: () => number;
  agent: KeyPair;
  /** The server's own chain, root first. */
  chain: DelegationCertificate[];
  principalLocal: boolean;
  /** Other agents' chains the server may show in their reports. */
  knownChains?: DelegationCertificate[][];
  /** Holds the agent's chain lock (auditor.withChainLock), so no block lands while an epoch is rolled. */
  withChainLock: <T>(fn: () => Promise<T>) => Promise<T>;
  /**
   * block_hash values whose Ed25519 signature is known good (signed by this process or verified by an
   * earlier report): every check still runs on every block, only those signature checks are skipped
   * (core/breadcrumb.ts verifyChain). Bounded by the caller.
   */
  signatureCache?: Set<string>;
  /** Checks the signatures of blocks above the verified-through mark (default: block-verifier.ts). */
  blockVerifier?: BlockVerifier;
}

interface Profile {
  chain: DelegationCertificate[];
  certificate: DelegationCertificate;
  principalLocal: boolean;
}

/** A short, stable, human-readable name for an agent key. */
export const agentHandle = (agentPk: string): string => `agent-${agentPk.slice(0, 8)}`;

/**
 * verifyChain, giving the event loop a turn between slices: a 100,000-block chain takes seconds to verify,
 * and tool calls and health checks must not wait for it.
 */
async function verifyBetweenCalls(
  blocks: readonly StoredBreadcrumb[],
  options: VerifyChainOptions,
): Promise<ChainVerification> {
  const steps = chainVerifier(blocks, options);
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
    await nextTurn();
  }
}

interface ChainFacts {
  blocks: Breadcrumb[];
  verification: ChainVerification;
}

/**
 * The signature cache of one verification: `base` (the process's) plus what `trust` vouches for here. What
 * verifyChain itself verifies goes to `base` too; what is only trusted (the mark, the pool) stays here, so a
 * verdict recomputed without shortcuts never meets it.
 */
class LayeredSet extends Set<string> {
  private readonly trusted = new Set<string>();
  constructor(private readonly base: Set<string> | undefined) {
    super();
  }
  trust(value: string): void {
    this.trusted.add(value);
  }
  override has(value: string): boolean {
    return this.trusted.has(value) || this.base?.has(value) === true;
  }
  override add(value: string): this {
    this.base?.add(value);
    return this;
  }
}

/**
 * Verifies the blocks and keeps the content of those that verify: a block named by an issue (edited,
 * re-signed by another key, out of place) is reported in chain_verification and counts for nothing else.
 *
 * Each signature is verified once (docs/architecture.md "Audit chains"): blocks at or below the agent's
 * verified-through mark skip their Ed25519 check when the block at the mark still has the marked hash (every
 * block commits to its predecessor's hash, and verifyChain still checks every hash and link); the others are
 * verified by the BlockVerifier (a batch on the Ed25519 pool, all cores) before verifyChain runs the remaining
 * checks. The service's own writer keeps the mark on its tip (audit.ts), so normally nothing is above it. A verdict with any
 * issue is recomputed with no shortcut, so what it names is exactly what a full verification names. The mark
 * then moves up to the last block of an unbroken verified run that continues it.
 */
async function judge(
  store: AuditStore,
  verifier: KeyPair,
  blockVerifier: BlockVerifier,
  agentPk: string,
  stored: readonly StoredBreadcrumb[],
  anchor: StoredBreadcrumb | null,
  signatureCache: Set<string> | undefined,
): Promise<ChainFacts> {
  const held = await store.verifiedThrough(agentPk);
  // Only a mark this verifier signed itself: whoever writes the store could otherwise vouch for any chain.
  const mark = held !== null && isOwnVerifiedMark(held, agentPk, verifier.publicKey) ? held : null;
  const known = new LayeredSet(signatureCache);
  // Blocks under the mark passed every check before, their text included (core/breadcrumb.ts trustedThrough).
  let trustedThrough = -1;
  // Does this range continue the verified prefix (so the mark may move up over it)?
  let continues = mark === null ? anchor === null && stored[0]?.index === 0 : false;
  if (mark !== null) {
    const at = stored.find((block) => block.index === mark.index);
    if (at !== undefined && at.block_hash === mark.block_hash) {
      trustedThrough = mark.index;
      continues = true;
    } else if (anchor !== null && anchor.index === mark.index && anchor.block_hash === mark.block_hash) {
      continues = true;
    }
  }
  const todo = stored.filter(
    (block) => block.index > trustedThrough && block.agent_pk === agentPk && !known.has(block.block_hash),
  );
  if (todo.length > 0) {
    const ok = await blockVerifier.verify(todo.map((b) => [b.agent_pk, b.data_to_sign, b.signature] as const));
    todo.forEach((block, i) => {
      if (ok[i] === true) known.trust(block.block_hash);
    });
  }

  let parsed: Breadcrumb[] = [];
  let verification = await verifyBetweenCalls(stored, {
    anchor,
    parsedBlocks: parsed,
    signatureCache: known,
    trustedThrough,
  });
  if (!verification.is_valid) {
    parsed = [];
    verification = await verifyBetweenCalls(stored, {
      anchor,
      parsedBlocks: parsed,
      ...(signatureCache ? { signatureCache } : {}),
    });
  }
  if (continues) await raiseMark(store, verifier, agentPk, mark, stored, verification);
  if (verification.invalid_blocks.length === 0) return { blocks: parsed, verification };
  const invalid = new Set(verification.invalid_blocks);
  return { blocks: parsed.filter((block) => !invalid.has(block.index)), verification };
}

/** Moves the mark to the last block before the first invalid one, when that is above the mark. */
async function raiseMark(
  store: AuditStore,
  verifier: KeyPair,
  agentPk: string,
  mark: VerifiedMark | null,
  stored: readonly StoredBreadcrumb[],
  verification: ChainVerification,
): Promise<void> {
  const firstInvalid = verification.invalid_blocks[0];
  const upTo = firstInvalid === undefined ? stored.length : stored.findIndex((block) => block.index === firstInvalid);
  const last = stored[upTo - 1];
  if (last === undefined || last.index <= (mark?.index ?? -1)) return;
  await store.markVerified(agentPk, signVerifiedMark(verifier, agentPk, last.index, last.block_hash));
}

/** What the trust score needs of an agent's chain, judged up to `next` (exclusive). */
interface TrustTotals {
  next: number;
  /** The last block judged: the anchor of the next increment. */
  last: StoredBreadcrumb | null;
  operations: number;
  cells: Set<string>;
  firstBlockAt: string | null;
  valid: boolean;
}

/** A roll's own breadcrumb (read from its signed content; an unreadable block is never one). */
function isEpochRoll(stored: StoredBreadcrumb): boolean {
  const parsed = parseStoredBreadcrumb(stored);
  return parsed.ok && parsed.value.tool_name === EPOCH_ROLL_TOOL;
}

export function createReportService(deps: ReportServiceDeps): ReportService {
  const { store, clock, agent, signatureCache } = deps;
  const blockVerifier = deps.blockVerifier ?? defaultBlockVerifier;
  const own: Profile = {
    chain: deps.chain,
    certificate: deps.chain[deps.chain.length - 1] as DelegationCertificate,
    principalLocal: deps.principalLocal,
  };
  const profiles = new Map<string, Profile>();
  for (const chain of deps.knownChains ?? []) {
    const last = chain[chain.length - 1];
    if (last !== undefined) profiles.set(last.agent_pk, { chain, certificate: last, principalLocal: false });
  }
  profiles.set(agent.publicKey, own);

  async function ensureKnown(agentPk: string): Promise<void> {
    if (profiles.has(agentPk)) return;
    if ((await store.tip(agentPk)) === null) {
      throw new ServiceError('agent_not_found', `no audit chain for agent ${agentPk} in this store`);
    }
  }

  const totals = new Map<string, TrustTotals>();
  /** One update of an agent's totals at a time, so an increment is never added twice. */
  const updating = new Map<string, Promise<TrustTotals>>();

  async function addNewBlocks(agentPk: string): Promise<TrustTotals> {
    const t = totals.get(agentPk) ?? {
      next: 0,
      last: null,
      operations: 0,
      cells: new Set<string>(),
      firstBlockAt: null,
      valid: true,
    };
    const stored = await store.blocks(agentPk, { fromIndex: t.next });
    if (stored.length > 0) {
      const facts = await judge(store, agent, blockVerifier, agentPk, stored, t.last, signatureCache);
      for (const block of facts.blocks) {
        if (!isOperation(block)) continue;
        t.operations++;
        t.cells.add(block.loc_cell);
      }
      t.firstBlockAt ??= facts.verification.first_block_at;
      t.valid &&= facts.verification.is_valid;
      t.last = stored[stored.length - 1]!;
      t.next = t.last.index + 1;
    }
    totals.set(agentPk, t);
    return t;
  }

  function currentTotals(agentPk: string): Promise<TrustTotals> {
    const running = updating.get(agentPk);
    const next = (running ?? Promise.resolve()).then(
      () => addNewBlocks(agentPk),
      () => addNewBlocks(agentPk),
    );
    updating.set(agentPk, next);
    void next
      .finally(() => {
        if (updating.get(agentPk) === next) updating.delete(agentPk);
      })
      .catch(() => undefined);
    return next;
  }

  async function wholeChainTrust(agentPk: string): Promise<TrustView> {
    const t = await currentTotals(agentPk);
    const { score, parts } = trustScore({
      operations: t.operations,
      uniqueCells: t.cells.size,
      firstBlockAt: t.firstBlockAt,
      nowMs: clock(),
      chainValid: t.valid,
    });
    return {
      agent_pk: agentPk,
      trust_score: score,
      current_tier: tierFor(score),
      parts,
      thresholds: { ...TIER_THRESHOLDS },
      total_operations: t.operations,
      unique_cells: t.cells.size,
      first_block_at: t.firstBlockAt,
      chain_valid: t.valid,
    };
  }

  return {
    async report(agentPk, period) {
      await ensureKnown(agentPk);
      const nowMs = clock();
      const [stored, anchor, first, epochs, violations, approvals] = await Promise.all([
        store.blocks(agentPk, { from: period.from, to: period.to }),
        store.blockBefore(agentPk, period.from),
        store.blocks(agentPk, { fromIndex: 0, toIndex: 0 }, 1),
        store.epochs(agentPk),
        store.violations(agentPk, period.from, period.to),
        store.approvals(agentPk, period.from, period.to),
      ]);
      const facts = await judge(store, agent, blockVerifier, agentPk, stored, anchor, signatureCache);
      const fromMs = Date.parse(period.from);
      const toMs = Date.parse(period.to);
      const profile = profiles.get(agentPk);
      const rights = profile ? delegationChainRights(profile.chain) : undefined;
      const input = {
        agentPk,
        agentHandle: agentHandle(agentPk),
        principalPk: profile?.chain[0]?.principal_pk ?? '',
        principalLocal: profile?.principalLocal ?? false,
        period,
        blocks: facts.blocks,
        verification: facts.verification,
        epochs: epochs.filter((e) => {
          const at = Date.parse(e.rolled_at);
          return at >= fromMs && at <= toMs;
        }),
        chainDepth: profile?.chain.length ?? 0,
        violations,
        approvals: profile ? approvals : [],
        firstBlockEverAt: first[0]?.timestamp ?? null,
        nowMs,
        requiresApproval: (tool: string) =>
          profile !== undefined && requiresHumanApproval(profile.certificate, tool, rights),
      };
      if (profile !== undefined) return buildComplianceReport({ ...input, certificate: profile.certificate });
      // Built with a placeholder certificate, then shown as what is known of it.
      const report = buildComplianceReport({ ...input, certificate: own.certificate });
      return {
        ...report,
        delegation_certificate: {
          known: false,
          agent_pk: agentPk,
          cert_hash: facts.verification.delegation_cert_hash,
          principal_local: false,
        },
      };
    },

    async trust(agentPk) {
      await ensureKnown(agentPk);
      return wholeChainTrust(agentPk);
    },

    async verifyChain(agentPk) {
      await ensureKnown(agentPk);
      return (await judge(store, agent, blockVerifier, agentPk, await store.blocks(agentPk), null, signatureCache))
        .verification;
    },

    async rollEpoch() {
      const agentPk = agent.publicKey;
      // Judged before taking the lock: verifying a long chain must not hold up tool calls. Blocks appended
      // meanwhile are rolled too; the tier is the chain's as of just before the roll.
      const { current_tier } = await wholeChainTrust(agentPk);
      return deps.withChainLock(async (): Promise<EpochRoll> => {
        const epochs = await store.epochs(agentPk);
        const previous = epochs[epochs.length - 1] ?? null;
        const start = nextUnrolledIndex(previous);
        const blocks = await store.blocks(agentPk, { fromIndex: start });
        // Only earlier rolls' own breadcrumbs since the last epoch: nothing happened worth sealing.
        if (blocks.every(isEpochRoll)) return { ok: false, message: noBlocksToRollMessage(start) };
        const epoch = rollAgentEpoch({ agent, blocks, previous, tier: current_tier, nowMs: clock() });
        await store.appendEpoch(epoch);
        return {
          ok: true,
          epoch,
          value: {
            success: true,
            epoch_index: epoch.epoch_index,
            block_count: epoch.block_count,
            start_block: epoch.start_block,
            end_block: epoch.end_block,
            merkle_root: epoch.merkle_root,
            tier_at_close: epoch.tier_at_close,
            epoch_hash: epoch.epoch_hash,
          },
        };
      });
    },
  };
}
