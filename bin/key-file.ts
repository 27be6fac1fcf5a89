import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { keyPairFromSecret, type KeyPair } from '../core/identity.js';

/** Key files are JSON `{ public_key, secret_key }`, mode 0600. A bare hex secret is accepted too. */
export function readKeyFile(path: string): KeyPair {
  const text = readFileSync(path, 'utf8').trim();
  const secret = text.startsWith('{') ? (JSON.parse(text) as { secret_key?: unknown }).secret_key : text;
  if (typeof secret !== 'string') throw new TypeError(`${path}: no secret_key`);
  return keyPairFromSecret(secret);
}

export function writeKeyFile(path: string, key: KeyPair): void {
  if (existsSync(path)) throw new Error(`${path} already exists; refusing to overwrite a key`);
  // 'wx' also refuses a file created in between; mode 0600 keeps it private to its owner.
  writeFileSync(path, `${JSON.stringify({ public_key: key.publicKey, secret_key: key.secretKey }, null, 2)}\n`, {
    mode: 0o600,
    flag: 'wx',
  });
}
