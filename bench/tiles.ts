import { spawn } from 'node:child_process';
import { once } from 'node:events';
import autocannon from 'autocannon';
import { cellToChildren } from 'h3-js';

const DURATION_S = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = 32;

export interface TileBench {
  tilePerSecond: number;
  barePerSecond: number;
  ratio: number;
  tileP99Ms: number;
  bareP99Ms: number;
  statuses: Record<string, number>;
  /**
   * Tile answers autocannon counted (warm-up included) and the serves the proof records list. Autocannon stops
   * with up to one request per connection in flight, which the gateway still serves and records: none was lost
   * when `servesRecorded - tileAnswers` is within 0..`inFlightBound`.
   */
  tileAnswers: number;
  servesRecorded: number;
  inFlightBound: number;
}

const statusCounts = (result: autocannon.Result) =>
  Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, s]) => [code, s.count ?? 0]));

/**
 * Cache hits of the tile route (request context, gates 1–4, the cache, headers, every serve listed in its tile's
 * aggregate proof record) against a bare Koa route returning the same bytes, both in one server process;
 * autocannon in this process. 49 cells of one resolution-6 parent are requested round-robin, all warmed first,
 * so every timed request is a HIT. Rates are the mean of two alternating rounds; p99 is the worse round's. Once
 * the server stops, the serves its records list are counted against the tile answers autocannon received.
 */
export async function benchTileHits(): Promise<TileBench> {
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'] : [];
  const server = spawn(process.execPath, [...profile, '--import', 'tsx', 'bench/tile-server.ts'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const [chunk] = (await once(server.stdout, 'data')) as [Buffer];
    const [tilePort, barePort] = chunk.toString().trim().split(' ');
    const cells = cellToChildren('861e8050fffffff', 8);
    const requests = cells.map((cell) => ({ method: 'GET' as const, path: `/v1/tiles/${cell}/14/osm-standard.png` }));
    const run = (port: string, duration: number) =>
      autocannon({ url: `http://127.0.0.1:${port}`, connections: CONNECTIONS, duration, requests });
    const warm = await run(tilePort!, 1); // warm-up: fills the cache, JIT
    await run(barePort!, 1);
    // Alternate the two, twice, and average: the load generator shares the two cores, and a single
    // back-to-back pair swings by ±15 % with whatever else the machine does.
    const tiles: autocannon.Result[] = [];
    const bares: autocannon.Result[] = [];
    for (let round = 0; round < 2; round++) {
      tiles.push(await run(tilePort!, DURATION_S));
      bares.push(await run(barePort!, DURATION_S));
    }
    const mean = (results: autocannon.Result[], pick: (r: autocannon.Result) => number) =>
      results.reduce((sum, r) => sum + pick(r), 0) / results.length;
    const answered = (r: autocannon.Result) => Object.values(statusCounts(r)).reduce((sum, n) => sum + n, 0);
    const tileAnswers = [warm, ...tiles].reduce((sum, r) => sum + answered(r), 0);
    const tilePerSecond = mean(tiles, (r) => r.requests.average);
    const barePerSecond = mean(bares, (r) => r.requests.average);
    return {
      tilePerSecond,
      barePerSecond,
      ratio: tilePerSecond / barePerSecond,
      tileP99Ms: Math.max(...tiles.map((r) => r.latency.p99)),
      bareP99Ms: Math.max(...bares.map((r) => r.latency.p99)),
      statuses: statusCounts(tiles[0]!),
      tileAnswers,
      servesRecorded: await recordedServes(server),
      inFlightBound: CONNECTIONS * (1 + tiles.length),
    };
  } finally {
    if (server.exitCode === null) {
      server.kill('SIGTERM');
      await once(server, 'exit');
    }
  }
}

/** Stops the server and reads the `serves N` line it prints once its proof writer flushed. */
async function recordedServes(server: ReturnType<typeof spawn>): Promise<number> {
  let out = '';
  server.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const exited = once(server, 'exit');
  server.kill('SIGTERM');
  await exited;
  return Number(/serves (\d+)/.exec(out)?.[1] ?? 0);
}
