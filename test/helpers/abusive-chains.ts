/**
 * Delegation chains for the abuse tests, shared by every entry point (gateway gate 3, the governance
 * tools and POST /token, the perception server's IDN_DELEGATION_CERT): two chains that verify, and eleven that
 * must not, each with the reason core/delegation-cert.ts gives: a link delegating past its max_depth, a chain
 * over MAX_CHAIN_LENGTH links, loops, and repeated links.
 */
import { MAX_CHAIN_LENGTH, type DelegationCertificate } from '../../core/delegation-cert.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';

export interface ChainCase {
  name: string;
  chain: DelegationCertificate[];
  /** The chain's last agent: the one that asks. */
  requester: KeyPair;
  detail: RegExp;
  /** Longer than any chain a verifier reads: refused before it is judged. */
  overLong?: true;
}

/** One link `principal → agent` with its max_depth, over whatever cells and facets the entry point needs. */
export type LinkMaker = (principal: KeyPair, agent: KeyPair, maxDepth: number) => DelegationCertificate;

export const human = generateKeyPair();
export const a = generateKeyPair();
export const b = generateKeyPair();
export const alice = generateKeyPair();
const many = Array.from({ length: MAX_CHAIN_LENGTH + 2 }, () => generateKeyPair());

export function chainCases(link: LinkMaker): { controls: ChainCase[]; abuses: ChainCase[] } {
  const through = (keys: KeyPair[], depths: number[]) => depths.map((depth, i) => link(keys[i]!, keys[i + 1]!, depth));
  const descending = (n: number) => Array.from({ length: n }, (_, i) => n - 1 - i);
  const over = MAX_CHAIN_LENGTH + 1;
  return {
    controls: [
      { name: 'human → A → alice', chain: through([human, a, alice], [1, 0]), requester: alice, detail: /./ },
      {
        name: `${MAX_CHAIN_LENGTH} links, max_depth ${MAX_CHAIN_LENGTH - 1} down to 0`,
        chain: through(many.slice(0, MAX_CHAIN_LENGTH + 1), descending(MAX_CHAIN_LENGTH)),
        requester: many[MAX_CHAIN_LENGTH]!,
        detail: /./,
      },
    ],
    abuses: [
      {
        name: 'depth: a link with max_depth 0 delegates further',
        chain: through([human, a, alice], [0, 0]),
        requester: alice,
        detail: /link 0: max_depth 0 does not allow further delegation/,
      },
      {
        name: "depth: a child keeps its parent's max_depth",
        chain: through([human, a, alice], [1, 1]),
        requester: alice,
        detail: /link 1: max_depth 1 must be at most 0/,
      },
      {
        name: 'depth: three links under a root max_depth 1',
        chain: through([human, a, b, alice], [1, 0, 0]),
        requester: alice,
        detail: /link 1: max_depth 0 does not allow further delegation/,
      },
      {
        name: `length: ${over} links, every max_depth in order`,
        chain: through(many.slice(0, over + 1), descending(over)),
        requester: many[over]!,
        detail: new RegExp(`delegation chain has ${over} links; at most ${MAX_CHAIN_LENGTH}`),
        overLong: true,
      },
      {
        name: 'loop: human → A → B → A',
        chain: through([human, a, b, a], [2, 1, 0]),
        requester: a,
        detail: /link 2: agent_pk is link 1's principal_pk \(delegation loop\)/,
      },
      {
        name: 'loop: human → A → A',
        chain: through([human, a, a], [1, 0]),
        requester: a,
        detail: /link 1: agent_pk is link 1's principal_pk \(delegation loop\)/,
      },
      {
        name: 'loop: back to the human (human → A → human)',
        chain: through([human, a, human], [1, 0]),
        requester: human,
        detail: /link 1: agent_pk is link 0's principal_pk \(delegation loop\)/,
      },
      {
        name: 'loop: a self-delegation at the root (human → human → alice)',
        chain: through([human, human, alice], [1, 0]),
        requester: alice,
        detail: /link 0: agent_pk is link 0's principal_pk \(delegation loop\)/,
      },
      {
        name: 'repeated link: the same certificate twice',
        chain: [link(human, alice, 1), link(human, alice, 1)],
        requester: alice,
        detail: /link 1: principal_pk is not link 0's agent_pk \(broken chain\)/,
      },
      {
        name: 'repeated link: the last link twice (human → A → alice, A → alice)',
        chain: [...through([human, a, alice], [1, 0]), link(a, alice, 0)],
        requester: alice,
        detail: /link 2: principal_pk is not link 1's agent_pk \(broken chain\)/,
      },
      {
        name: `repeated link: one link repeated up to ${over} links`,
        chain: Array.from({ length: over }, () => link(human, alice, 0)),
        requester: alice,
        detail: new RegExp(`delegation chain has ${over} links`),
        overLong: true,
      },
    ],
  };
}
