import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { keyPairFromSecret, generateKeyPair, type KeyPair } from '../core/identity.js';
import { readKeyFile, writeKeyFile } from './key-file.js';

/**
 * The node's own key: it signs the proof records and seals this node writes and its pushes to the
 * central store. From NODE_SECRET_KEY, else `DATA_DIR/node-key.json`, created (mode 0600) on first start.
 */
export function loadNodeKey(dataDir: string, secretKey: string | undefined): { key: KeyPair; source: string } {
  if (secretKey !== undefined) return { key: keyPairFromSecret(secretKey), source: 'NODE_SECRET_KEY' };
  const path = join(dataDir, 'node-key.json');
  if (existsSync(path)) return { key: readKeyFile(path), source: path };
  mkdirSync(dataDir, { recursive: true });
  const key = generateKeyPair();
  writeKeyFile(path, key);
  return { key, source: `${path} (new)` };
}
