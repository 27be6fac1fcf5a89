import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Agent, request } from 'node:http';
import autocannon from 'autocannon';

const DURATION_S = Number(process.env.BENCH_SECONDS ?? 5);
const SEQUENTIAL = 2000;

export interface ChatBench {
  /** Completions per second through the gateway, 32 connections. */
  perSecond: number;
  /** Latency of one completion through the gateway, one at a time (ms). */
  p50Ms: number;
  p99Ms: number;
  /** The same request straight to the runtime: what the gateway adds is the difference. */
  runtimeP50Ms: number;
  runtimeP99Ms: number;
  /** The same request through a bare Koa proxy to the runtime (bench/chat-server.ts): the floor of a Node proxy. */
  bareProxyP50Ms: number;
  /**
   * CPU time of the server process per completion through the gateway, less the runtime's own share (the same
   * requests sent straight to it), in µs: what the gateway costs, and unlike latency hardly moved by the other
   * work on a shared machine. Deferred work (the outcome write, the proof batch) is included.
   */
  gatewayCpuMicros: number;
  requests: number;
  statuses: Record<string, number>;
}

const body = JSON.stringify({ model: 'tinyllama', messages: [{ role: 'user', content: 'one park in Rome' }] });
const headers = { authorization: 'Bearer sk-bench', 'content-type': 'application/json' };

/** One POST over `agent`; resolves with its latency in ms. */
function post(url: string, agent: Agent): Promise<number> {
  const started = performance.now();
  return new Promise<number>((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers }, (res) => {
      res.resume();
      res.on('end', () =>
        res.statusCode === 200 ? resolve(performance.now() - started) : reject(new Error(`HTTP ${res.statusCode}`)),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Consecutive POSTs to one URL before the series switch to the next (see sequential). */
const BLOCK = 50;

/**
 * `count` POSTs to each URL, one at a time over one keep-alive connection each, the URLs taking turns in blocks
 * of BLOCK: on a shared machine the series then see the same load, so their difference is what the gateway
 * adds. Blocks, not single requests: the gateway does its deferred work (proof record, worker outcome) after
 * each answer, and a runtime request sent at once would wait for it, counting the gateway's work as the
 * runtime's. Latencies in ms, sorted, per URL.
 */
async function sequential(urls: string[], count: number): Promise<number[][]> {
  const agents = urls.map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
  const out = urls.map((): number[] => []);
  for (let done = 0; done < count; done += BLOCK) {
    for (let u = 0; u < urls.length; u++) {
      for (let i = done; i < Math.min(count, done + BLOCK); i++) out[u]!.push(await post(urls[u]!, agents[u]!));
    }
  }
  for (const agent of agents) agent.destroy();
  return out.map((series) => series.sort((a, b) => a - b));
}

const pct = (sorted: number[], p: number) => Number(sorted[Math.ceil(p * sorted.length) - 1]!.toFixed(2));

/**
 * The gateway's own cost per chat completion: gates, API key, dispatch (registry read), the openai client's
 * upstream call, accounting, the proof record (queued) and the worker's outcome, against a fake runtime that
 * answers at once. Server in its own process; load from this one.
 */
export async function benchChat(): Promise<ChatBench> {
  // BENCH_PROFILE=DIR writes the server's CPU profile there (`1` keeps the old /tmp/prof).
  const profileDir = process.env.BENCH_PROFILE === '1' ? '/tmp/prof' : process.env.BENCH_PROFILE;
  const profile = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  const server = spawn(process.execPath, [...profile, '--import', 'tsx', 'bench/chat-server.ts'], {
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const cpu = async () => {
    server.send('cpu');
    return ((await once(server, 'message')) as [number])[0];
  };
  /** Server CPU µs per request of `count` sequential POSTs to `url`. */
  const cpuPerRequest = async (url: string, count: number) => {
    const before = await cpu();
    await sequential([url], count);
    return ((await cpu()) - before) / count;
  };
  try {
    if (!server.stdout) throw new Error('the chat server has no stdout');
    const [chunk] = (await once(server.stdout, 'data')) as [Buffer];
    const [port, runtimeUrl, barePort] = chunk.toString().trim().split(' ');
    const gatewayUrl = `http://127.0.0.1:${port}/v1/chat/completions`;
    const urls = [gatewayUrl, `${runtimeUrl}/chat/completions`, `http://127.0.0.1:${barePort}/v1/chat/completions`];
    await sequential(urls, 200); // warm-up: JIT, connections
    const [viaGateway, direct, viaBare] = (await sequential(urls, SEQUENTIAL)) as [number[], number[], number[]];
    const gatewayCpu = await cpuPerRequest(gatewayUrl, SEQUENTIAL);
    const runtimeCpu = await cpuPerRequest(urls[1]!, SEQUENTIAL);
    const load = await autocannon({
      url: gatewayUrl,
      connections: 32,
      duration: DURATION_S,
      method: 'POST',
      headers,
      body,
    });
    return {
      perSecond: load.requests.average,
      p50Ms: pct(viaGateway, 0.5),
      p99Ms: pct(viaGateway, 0.99),
      runtimeP50Ms: pct(direct, 0.5),
      runtimeP99Ms: pct(direct, 0.99),
      bareProxyP50Ms: pct(viaBare, 0.5),
      gatewayCpuMicros: Math.round(gatewayCpu - runtimeCpu),
      requests: load.requests.total,
      statuses: Object.fromEntries(Object.entries(load.statusCodeStats ?? {}).map(([c, s]) => [c, s.count ?? 0])),
    };
  } finally {
    server.kill('SIGTERM');
    await once(server, 'exit');
  }
}

export const describeChatBench = (r: ChatBench) =>
  `chat: ${Math.round(r.perSecond)} completions/s (32 connections, ${r.requests} requests, statuses ${JSON.stringify(r.statuses)}); ` +
  `one at a time p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms through the gateway vs p50 ${r.runtimeP50Ms} ms, p99 ${r.runtimeP99Ms} ms straight to the runtime, p50 ${r.bareProxyP50Ms} ms through a bare Koa proxy; ` +
  `gateway CPU ${r.gatewayCpuMicros} µs per completion`;
