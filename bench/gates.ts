import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Agent, request } from 'node:http';
import { signRequestBody } from '../core/gates/signature.js';
import { generateKeyPair, signMessage, verifySignature } from '../core/identity.js';

const DURATION_MS = Number(process.env.BENCH_SECONDS ?? 5) * 1000;
const CONCURRENCY = 32;

/** Bare Ed25519 verification with a cached key: the ceiling for gate 1. */
export function benchVerify(): { perSecond: number } {
  const key = generateKeyPair();
  const message = JSON.stringify({ steps: [{ id: 'a', type: 'inference' }], requester_pk: key.publicKey });
  const signature = signMessage(key.secretKey, message);
  let n = 0;
  const end = performance.now() + Math.min(DURATION_MS, 3000);
  while (performance.now() < end) {
    for (let i = 0; i < 200; i++) if (!verifySignature(key.publicKey, message, signature)) throw new Error('verify');
    n += 200;
  }
  return { perSecond: n / (Math.min(DURATION_MS, 3000) / 1000) };
}

/**
 * Signed requests that pass gates 1-3 and are rejected by gate 4 (a dependency cycle), over HTTP with
 * keep-alive against a gateway in a child process. Bodies are signed up front: client signing cost is
 * not part of the figure. Distinct keys defeat the per-key cache the way many clients would.
 */
export async function benchGateRejects(): Promise<{
  perSecond: number;
  requests: number;
  statusCounts: Record<number, number>;
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
    const port = Number(chunk.toString().trim());
    const keys = Array.from({ length: 64 }, () => generateKeyPair());
    const bodies = Array.from({ length: 2000 }, (_, i) => {
      const signed = signRequestBody(keys[i % keys.length]!.secretKey, {
        h3_cell: '861e8050fffffff',
        nonce: String(i),
        steps: [
          { id: 'a', type: 'inference', depends_on: 'b' },
          { id: 'b', type: 'inference', depends_on: 'a' },
        ],
      });
      return { payload: JSON.stringify(signed.body), signature: signed.signature };
    });
    const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const statusCounts: Record<number, number> = {};
    let sent = 0;
    const send = (i: number) =>
      new Promise<void>((resolve, reject) => {
        const { payload, signature } = bodies[i % bodies.length]!;
        const req = request(
          {
            agent,
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/v1/compute',
            headers: {
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(payload),
              'x-idn-signature': signature,
            },
          },
          (res) => {
            statusCounts[res.statusCode ?? 0] = (statusCounts[res.statusCode ?? 0] ?? 0) + 1;
            res.resume();
            res.on('end', resolve);
          },
        );
        req.on('error', reject);
        req.end(payload);
      });
    // Warm up (JIT, key caches), then measure.
    await Promise.all(Array.from({ length: 500 }, (_, i) => send(i)));
    const start = performance.now();
    const deadline = start + DURATION_MS;
    const worker = async () => {
      while (performance.now() < deadline) await send(sent++);
    };
    for (const k of Object.keys(statusCounts)) delete statusCounts[Number(k)];
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const seconds = (performance.now() - start) / 1000;
    agent.destroy();
    return { perSecond: sent / seconds, requests: sent, statusCounts };
  } finally {
    server.kill();
  }
}
