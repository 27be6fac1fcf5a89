/**
 * API keys of the OpenAI-compatible endpoints (docs/protocol.md §5.3), created with `geofabric apikey create`
 * and stored hashed: the store never holds a key, only SHA-256 of it. Key format, hashing and the stored
 * record's schema: `api-key-format.ts` (`gf_` + 32 random bytes base64url; ids `key_` + 16 hex). Adapters:
 * `sqlite/api-key-store.ts`, `mongo/api-key-store.ts`; the contract is `test/store/api-key-store.contract.ts`.
 */
export type ApiKeyTier = 'free' | 'pro' | 'enterprise';

export interface ApiKeyRecord {
  /** Public identifier (not secret), e.g. for logs and quotas. */
  id: string;
  name: string;
  tier: ApiKeyTier;
  created_at: string;
  revoked_at: string | null;
}

export interface ApiKeyStore {
  /** Creates a key; the secret is returned once and never stored. A blank name or unknown tier throws RangeError. */
  create(name: string, tier: ApiKeyTier, nowMs: number): Promise<{ key: string; record: ApiKeyRecord }>;
  /** The key's record when it exists and is not revoked; null otherwise. Constant work per call. */
  verify(key: string): Promise<ApiKeyRecord | null>;
  /** `verify` answered at once, by a store that needs no I/O wait for it (SQLite); absent elsewhere. */
  verifyNow?(key: string): ApiKeyRecord | null;
  /** Every key, revoked ones included, oldest first (then by id). */
  list(): Promise<ApiKeyRecord[]>;
  /** True when a live key was revoked. */
  revoke(id: string, nowMs: number): Promise<boolean>;
  close(): Promise<void>;
}
