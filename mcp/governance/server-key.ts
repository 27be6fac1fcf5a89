/**
 * The governance server's own identity: the Ed25519 key that signs its audit bundles and the
 * tokens it issues. It is not an agent and holds no delegation: verifiers trust it by its public key
 * (`/health` shows it as `server_pk`; the perception server is given it as the token issuer key).
 *
 * Source, in order: GOVERNANCE_SK (hex seed, or seed‖pk), else `<dataDir>/governance/server-key.json`,
 * created mode 0600 on first start and never overwritten (a new key would orphan every bundle signed so far).
 * Files under `<dataDir>` must never be committed (`data/` is ignored).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateKeyPair, keyPairFromSecret, type KeyPair } from '../../core/identity.js';

/** A configured key that cannot be used; the message names the variable or the file. */
export class GovernanceKeyError extends Error {
  override name = 'GovernanceKeyError';
}

export function governanceDir(dataDir: string): string {
  return join(dataDir, 'governance');
}

export function loadGovernanceKey(options: { dataDir: string; secretKey?: string | undefined }): {
  key: KeyPair;
  source: string;
} {
  if (options.secretKey !== undefined && options.secretKey.trim() !== '') {
    try {
      return { key: keyPairFromSecret(options.secretKey.trim()), source: 'GOVERNANCE_SK' };
    } catch (error) {
      throw new GovernanceKeyError(`GOVERNANCE_SK: ${(error as Error).message}`);
    }
  }
  const dir = governanceDir(options.dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, 'server-key.json');
  if (existsSync(path)) {
    try {
      const parsed = JSON.parse(readFileSync(path, 'utf8')) as { secret_key?: unknown };
      if (typeof parsed.secret_key !== 'string') throw new TypeError('no secret_key');
      return { key: keyPairFromSecret(parsed.secret_key), source: path };
    } catch (error) {
      throw new GovernanceKeyError(`${path}: not a usable key file (${(error as Error).message})`);
    }
  }
  const key = generateKeyPair();
  // 'wx': never overwrite, even a file created in between.
  writeFileSync(path, `${JSON.stringify({ public_key: key.publicKey, secret_key: key.secretKey }, null, 2)}\n`, {
    mode: 0o600,
    flag: 'wx',
  });
  return { key, source: `${path} (new)` };
}
