#!/bin/sh
# Health of a swarm worker container, as the fabric sees it: healthy when the gateway (GATEWAY_URL) lists
# this worker's node key as online (a heartbeat within the last 30 s, and not left). The worker serves no HTTP of its own,
# and "registered and heartbeating" is what makes it eligible for jobs.
#
# The node key is NODE_SECRET_KEY when set (64-hex seed, or 128-hex seed‖public key), else
# DATA_DIR/worker/node-key.json, which `geofabric worker` creates on first start. Exit 0 healthy, 1 not.
# Slim images have no curl: Node (already in the image) does the request.
exec node --input-type=module - <<'EOF'
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const fail = (why) => {
  console.error(`unhealthy: ${why}`);
  process.exit(1);
};

function publicKey() {
  const secret = (process.env.NODE_SECRET_KEY ?? '').trim().toLowerCase();
  if (/^[0-9a-f]{128}$/.test(secret)) return secret.slice(64);
  if (/^[0-9a-f]{64}$/.test(secret)) {
    // PKCS#8 wrapping of a raw Ed25519 seed (RFC 8410).
    const der = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.from(secret, 'hex')]);
    const jwk = createPublicKey(createPrivateKey({ key: der, format: 'der', type: 'pkcs8' })).export({ format: 'jwk' });
    return Buffer.from(jwk.x, 'base64url').toString('hex');
  }
  const file = join(process.env.DATA_DIR ?? './data', 'worker', 'node-key.json');
  try {
    return JSON.parse(readFileSync(file, 'utf8')).public_key;
  } catch {
    return fail(`no node key yet (${file})`);
  }
}

const pk = publicKey();
const gateway = (process.env.GATEWAY_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
try {
  const res = await fetch(`${gateway}/svc/workers`, { signal: AbortSignal.timeout(8000) });
  if (!res.ok) fail(`GET ${gateway}/svc/workers answered ${res.status}`);
  const { workers } = await res.json();
  const me = workers.find((w) => w.pk === pk);
  if (!me) fail(`worker ${pk} is not registered at ${gateway}`);
  if (!me.online) fail(`worker ${pk} is registered but not online (last seen ${me.last_seen})`);
  console.log(`healthy: worker ${pk} online at ${gateway}`);
} catch (error) {
  fail(`gateway ${gateway} unreachable: ${error.message}`);
}
EOF
