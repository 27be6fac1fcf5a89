/**
 * The fixed `worker_pk` of a step or answer the backbone served (docs/protocol.md §1.5, §2.3: transparent, never a key).
 * In core so the ledger (core/ledger-entries.ts) can tell backbone steps from workers' without importing
 * activities; activities/inference/inference-record.ts re-exports it.
 */
export const BACKBONE_WORKER = 'backbone';
