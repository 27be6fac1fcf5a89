import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { sha256Hex } from '../core/hash.js';
import type { ApiKeyRecord, ApiKeyTier } from './api-key-store.js';

/**
 * What an API key is and how it is kept, shared by the adapters of {@link ApiKeyStore}.
 *
 * A key is `gf_` followed by 32 random bytes in base64url (46 characters): the prefix makes a leaked key
 * recognisable to secret scanners and to people, and 256 random bits make guessing hopeless. The store keeps
 * only SHA-256 of the key. A fast, unsalted hash is right here, unlike for passwords: with 2^256 possible keys
 * there is no dictionary to try, so slowing each guess buys nothing, and verifying stays one index lookup.
 * The lookup's timing depends only on the hash of what was sent, which tells a caller nothing about any key.
 *
 * A key's public id (`key_` and 16 random hex digits) is independent of the secret: it names the key in
 * logs, quotas and `geofabric apikey revoke` without revealing anything about it.
 */
export const API_KEY_PREFIX = 'gf_';
export const API_KEY_TIERS = ['free', 'pro', 'enterprise'] as const satisfies readonly ApiKeyTier[];
export const isApiKeyTier = (value: unknown): value is ApiKeyTier => API_KEY_TIERS.includes(value as ApiKeyTier);

/** Version of the stored record; bump it (and migrate) when the stored fields change. */
export const API_KEY_RECORD_VERSION = 1;

const KEY_SHAPE = /^gf_[A-Za-z0-9_-]{43}$/;

/** Only strings of the issued shape can be keys; anything else is refused without a lookup. */
export const isWellFormedApiKey = (key: string): boolean => KEY_SHAPE.test(key);

/** The only form in which a key is stored (64 lowercase hex). */
export const hashApiKey = (key: string): string => sha256Hex(key);

export interface NewApiKey {
  key: string;
  id: string;
  keyHash: string;
}

/** A fresh key; `random` is injectable for tests, and must be a CSPRNG in production. */
export function generateApiKey(random: (size: number) => Buffer = randomBytes): NewApiKey {
  const key = `${API_KEY_PREFIX}${random(32).toString('base64url')}`;
  return { key, id: `key_${random(8).toString('hex')}`, keyHash: hashApiKey(key) };
}

/** A key's name: what an operator calls it in `apikey list` (who or what uses it). */
export const apiKeyNameSchema = z
  .string()
  .trim()
  .min(1, 'a key needs a name')
  .max(200, 'a key name has at most 200 characters')
  // Names are printed to terminals: no control characters (escape sequences) in them.
  .regex(/^[^\p{Cc}]*$/u, 'a key name has no control characters');

/** Validates what `create` is given; a bad name or tier is the caller's bug, so it throws. */
export function assertNewApiKey(name: string, tier: ApiKeyTier): string {
  const parsed = apiKeyNameSchema.safeParse(name);
  if (!parsed.success) throw new RangeError(parsed.error.issues[0]?.message ?? 'invalid API key name');
  if (!isApiKeyTier(tier)) throw new RangeError(`unknown API key tier ${JSON.stringify(tier)}`);
  return parsed.data;
}

/** A record as read back from either adapter: checked, so a hand-edited row cannot grant a tier. */
export const apiKeyRecordSchema = z.object({
  id: z.string().min(1),
  name: z.string(),
  tier: z.enum(API_KEY_TIERS),
  created_at: z.iso.datetime(),
  revoked_at: z.iso.datetime().nullable(),
}) satisfies z.ZodType<ApiKeyRecord>;
