/**
 * Geofabric keys as Stellar accounts (docs/protocol.md §5.1: the same Ed25519 key is identity, ledger wallet and worker
 * key). A Stellar account id (`G…`) is the StrKey encoding of the raw 32-byte Ed25519 public key, and a
 * Stellar signing key is the same 32-byte seed, so no second key is ever generated or stored.
 */
import { Asset, Keypair, StrKey } from '@stellar/stellar-sdk';
import { hexToBytes, isHex } from '../../core/hex.js';
import type { KeyPair } from '../../core/identity.js';

/** 64-hex Ed25519 public key → Stellar account id (`G…`). Throws TypeError on anything else. */
export function stellarAddress(publicKeyHex: string): string {
  if (!isHex(publicKeyHex, 32)) throw new TypeError('public key must be 64 hex');
  return StrKey.encodeEd25519PublicKey(Buffer.from(hexToBytes(publicKeyHex)));
}

/** Stellar account id (`G…`) → 64-hex Ed25519 public key; null when it is not a valid account id. */
export function publicKeyOfAddress(address: string): string | null {
  if (!StrKey.isValidEd25519PublicKey(address)) return null;
  return Buffer.from(StrKey.decodeEd25519PublicKey(address)).toString('hex');
}

/** Our key pair (64-hex seed) → the Stellar Keypair that signs with the same key. */
export function stellarKeypair(pair: KeyPair): Keypair {
  const seed = pair.secretKey.slice(0, 64); // a 128-hex seed‖pk carries the seed first
  if (!isHex(seed, 32)) throw new TypeError('secret key must be a 64-hex seed');
  const keypair = Keypair.fromRawEd25519Seed(Buffer.from(hexToBytes(seed)));
  // A mismatch means the KeyPair was assembled by hand from two different keys: never sign with it.
  if (Buffer.from(keypair.rawPublicKey()).toString('hex') !== pair.publicKey.toLowerCase()) {
    throw new TypeError('secret key does not belong to the public key');
  }
  return keypair;
}

/**
 * The settlement asset from its configured form: `native` (XLM) or `CODE:ISSUER` (a credit asset, the
 * issuer a `G…` account id). Throws RangeError on anything else, so a typo fails at start-up.
 */
export function parseAsset(spec: string): Asset {
  const trimmed = spec.trim();
  if (trimmed === '' || trimmed.toLowerCase() === 'native' || trimmed.toUpperCase() === 'XLM') return Asset.native();
  const match = /^([A-Za-z0-9]{1,12}):(G[A-Z2-7]{55})$/.exec(trimmed);
  if (match === null || !StrKey.isValidEd25519PublicKey(match[2]!)) {
    throw new RangeError(`settlement asset must be "native" or CODE:ISSUER, got "${spec}"`);
  }
  return new Asset(match[1]!, match[2]!);
}

/** The asset's configured form again (`native` or `CODE:ISSUER`), for logs and comparisons. */
export function assetSpec(asset: Asset): string {
  return asset.isNative() ? 'native' : `${asset.getCode()}:${asset.getIssuer()}`;
}
