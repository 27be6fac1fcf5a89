import { spawn } from 'node:child_process';
import { once } from 'node:events';
import autocannon from 'autocannon';
import { signRequestBody } from '../core/gates/signature.js';
import { generateKeyPair, signMessage, verifySignature } from '../core/identity.js';

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
 * Signed requests that pass gates 1-3 and are rejected by gate 4 (a dependency cycle), over HTTP with
 * keep-alive against a gateway in its own process; autocannon generates the load from this process.
 * 500 bodies from 64 keys are signed up front, so client signing is not part of the figure.
 */
export async function benchGateRejects(): Promise<{
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
    { stdio: ['ignore', 'pipe', 'inherit'] },
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
