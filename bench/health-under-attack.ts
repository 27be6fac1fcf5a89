// `npx tsx bench/health-under-attack.ts`: /health latency (p50, p99) from one address while another address sends
// expensive requests as fast as its per-address limit allows (RATE_LIMIT_IP_PER_MINUTE 6000: 100/s after a
// burst of 1,000), against a gateway in its own process. BENCH_SECONDS sets each phase (default 10). Prints
// figures, asserts nothing (docs/security.md §9: the goal is /health p99 < 50 ms).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Readable } from 'node:stream';
import { signRequestBody } from '../core/gates/signature.js';
import { generateKeyPair } from '../core/identity.js';
import { MAX_POSITIONS } from '../core/geometry.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);

function send(
  port: number,
  agent: Agent,
  localAddress: string,
  path: string,
  body?: string,
  headers: Record<string, string> = {},
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: body === undefined ? 'GET' : 'POST',
        agent,
        localAddress,
        headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN;

/** The attacks: each one request body (and headers) sent over and over. */
function attacks(): { name: string; body: string; headers: Record<string, string> }[] {
  const key = generateKeyPair();
  const n = MAX_POSITIONS - 1;
  const ring = Array.from({ length: n - 1 }, (_, i) => {
    const a = (2 * Math.PI * i) / (n - 1);
    const r = i % 2 ? 1 : 0.001 + i * 1e-7;
    return [12.5 + r * Math.cos(a), 41.9 + r * Math.sin(a)];
  });
  ring.push(ring[0] as number[]);
  const star = signRequestBody(key.secretKey, {
    h3_cell: '861e8050fffffff',
    steps: [
      {
        id: 'a',
        type: 'image_process',
        operation: 'ndvi',
        context: { area: { type: 'Polygon', coordinates: [ring] } },
      },
    ],
  });
  // ~1 MB of numbers: the most parse work a body within the limit carries.
  const numbers = JSON.stringify({
    requester_pk: key.publicKey,
    signature: 'ab'.repeat(64),
    x: Array.from({ length: 52_000 }, (_, i) => i * 1.000001),
  });
  return [
    { name: 'anonymous 1 MB, 500,000-deep array', body: '['.repeat(500_000) + ']'.repeat(500_000), headers: {} },
    {
      name: `1 MB of numbers, forged signature (${(numbers.length / 1024).toFixed(0)} KiB)`,
      body: numbers,
      headers: { 'x-idn-signature': 'ab'.repeat(64) },
    },
    {
      name: `self-signed ${MAX_POSITIONS}-vertex star polygon (${(JSON.stringify(star.body).length / 1024).toFixed(0)} KiB)`,
      body: JSON.stringify(star.body),
      headers: { 'x-idn-signature': star.signature },
    },
  ];
}

const server = spawn(process.execPath, ['--import', 'tsx', 'bench/health-attack-server.ts'], {
  stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
});
const loopDelay = async (): Promise<{ p50: number; p99: number; max: number }> => {
  const answer = once(server, 'message');
  server.send('report');
  return (await answer)[0] as { p50: number; p99: number; max: number };
};
try {
  const [chunk] = (await once(server.stdout as Readable, 'data')) as [Buffer];
  const port = Number(chunk.toString().trim());
  for (const attack of [{ name: 'no attack', body: '', headers: {} }, ...attacks()]) {
    const attackerAgent = new Agent({ keepAlive: true, maxSockets: 8 });
    const healthAgent = new Agent({ keepAlive: true, maxSockets: 1 });
    server.send('reset');
    const end = performance.now() + SECONDS * 1000;
    const statuses: Record<number, number> = {};
    const attacker = async () => {
      while (attack.body !== '' && performance.now() < end) {
        const status = await send(port, attackerAgent, '127.0.0.1', '/v1/compute', attack.body, attack.headers).catch(
          () => 0,
        );
        statuses[status] = (statuses[status] ?? 0) + 1;
      }
    };
    const health: number[] = [];
    const prober = async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        await send(port, healthAgent, '127.0.0.2', '/health');
        health.push(performance.now() - t0);
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    await Promise.all([...Array.from({ length: 8 }, attacker), prober()]);
    attackerAgent.destroy();
    healthAgent.destroy();
    health.sort((a, b) => a - b);
    const loop = await loopDelay();
    console.log(
      `${attack.name}: /health p50 ${percentile(health, 0.5).toFixed(1)} ms, p99 ${percentile(health, 0.99).toFixed(1)} ms ` +
        `(${health.length} probes); gateway event-loop delay p50 ${loop.p50.toFixed(1)} ms, p99 ${loop.p99.toFixed(1)} ms, ` +
        `max ${loop.max.toFixed(1)} ms; attacker statuses ${JSON.stringify(statuses)}`,
    );
  }
} finally {
  server.kill();
}
