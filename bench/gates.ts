import { spawn } from 'node:child_process';
import { once } from 'node:events';
import autocannon from 'autocannon';
import { signRequestBody } from '../core/gates/signature.js';
import { generateKeyPair, signMessage, verifySignature } from '../core/identity.js';
import { addressKey, createRateLimiter } from '../core/rate-limiter.js';

const DURATION_S = Number(process.env.BENCH_SECONDS ?? 5);

/** Bare Ed25519 verification with a cached key: the ceiling for gate 1. */
export function benchVerify(): { perSecond: number } {
  const key = generateKeyPair();
  const message = JSON.stringify({ steps: [{ id: 'a', type: 'inference' }], requester_pk: key.publicKey });
  const signature = signMessage(key.secretKey, message);
  const seconds = Math.min(DURATION_S, 3);
  let n = 0;
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    for (let i = 0; i < 200; i++) if (!verifySignature(key.publicKey, message, signature)) throw new Error('verify');
    n += 200;
  }
  return { perSecond: n / seconds };
}

/**
 * The per-request rate limit's own cost (core/rate-limiter.ts): the client-address key of an IPv6 peer plus
 * one bucket check, over 100,000 distinct clients (the limiter's bound), so every check is a map lookup in a
 * full map; and the map's size after a flood of new addresses (bounded, not growing).
 */
export function benchRateLimiter(): { nsPerCheck: number; keysAfterFlood: number } {
  const limiter = createRateLimiter({ perMinute: 6000, burstSeconds: 10 });
  const addresses = Array.from({ length: 100_000 }, (_, i) => `2001:db8:${(i >> 8) & 0xff}:${i & 0xff}::1`);
  const checks = 2_000_000;
  let now = 1.8e12;
  const started = performance.now();
  for (let i = 0; i < checks; i++) limiter.take(addressKey(addresses[i % addresses.length]!), (now += 0.01));
  const ns = ((performance.now() - started) * 1e6) / checks;
  for (let i = 0; i < 300_000; i++) limiter.take(`198.51.${i >> 8}.${i & 0xff}#${i}`, now);
  return { nsPerCheck: ns, keysAfterFlood: limiter.size() };
}

/**
 * Signed requests that pass gates 1-3 and are rejected by gate 4 (a dependency cycle), over HTTP with
 * keep-alive against a gateway in its own process (or `processes` node:cluster workers sharing its port);
 * autocannon generates the load from this process.
 * 500 bodies from 64 keys are signed up front, so client signing is not part of the figure.
 */
export async function benchGateRejects(processes = 1): Promise<{
  perSecond: number;
  requests: number;
  statusCounts: Record<string, number>;
  p99Ms: number;
}> {
  const server = spawn(
    process.execPath,
    [
      ...(process.env.BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'] : []),
      '--import',
      'tsx',
      'bench/gate-server.ts',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, BENCH_GATE_PROCESSES: String(processes) } },
  );
  try {
    const [chunk] = (await once(server.stdout, 'data')) as [Buffer];
    const url = `http://127.0.0.1:${chunk.toString().trim()}`;
    const keys = Array.from({ length: 64 }, () => generateKeyPair());
    const requests = Array.from({ length: 500 }, (_, i) => {
      const signed = signRequestBody(keys[i % keys.length]!.secretKey, {
        h3_cell: '861e8050fffffff',
        nonce: String(i),
        steps: [
          { id: 'a', type: 'inference', depends_on: 'b' },
          { id: 'b', type: 'inference', depends_on: 'a' },
        ],
      });
      return {
        method: 'POST' as const,
        path: '/v1/compute',
        headers: { 'content-type': 'application/json', 'x-idn-signature': signed.signature },
        body: JSON.stringify(signed.body),
      };
    });
    await autocannon({ url, connections: 32, duration: 1, requests }); // warm-up: JIT and key caches
    const result = await autocannon({ url, connections: 32, duration: DURATION_S, requests });
    const statusCounts: Record<string, number> = {};
    for (const [code, count] of Object.entries(result.statusCodeStats ?? {})) statusCounts[code] = count.count ?? 0;
    return {
      perSecond: result.requests.average,
      requests: result.requests.total,
      statusCounts,
      p99Ms: result.latency.p99,
    };
  } finally {
    server.kill();
  }
}
