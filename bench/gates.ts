import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { once } from 'node:events';
import autocannon from 'autocannon';
import { signRequestBody } from '../core/gates/signature.js';
import { generateKeyPair, signMessage, verifySignature } from '../core/identity.js';
import { addressKey, createRateLimiter } from '../core/rate-limiter.js';
import { keepAliveLoad, type LoadRequest } from './keepalive-load.js';

const DURATION_S = Number(process.env.BENCH_SECONDS ?? 5);

/**
 * Bare Ed25519 verification with a cached key: the ceiling for gate 1. `cpuUs` is the CPU time of one verify, which
 * (unlike the rate) holds on a machine other work competes for.
 */
export function benchVerify(): { perSecond: number; cpuUs: number } {
  const key = generateKeyPair();
  const message = JSON.stringify({ steps: [{ id: 'a', type: 'inference' }], requester_pk: key.publicKey });
  const signature = signMessage(key.secretKey, message);
  const seconds = Math.min(DURATION_S, 3);
  let n = 0;
  const cpu = process.cpuUsage();
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    for (let i = 0; i < 200; i++) if (!verifySignature(key.publicKey, message, signature)) throw new Error('verify');
    n += 200;
  }
  const used = process.cpuUsage(cpu);
  return { perSecond: n / seconds, cpuUs: (used.user + used.system) / n };
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

/** CPU time of one process from /proc, split into its main (JavaScript) thread and all other threads. */
interface ProcessCpu {
  mainUs: number;
  otherUs: number;
  /** Context switches of every thread, voluntary (waits) and not (preempted). */
  switches: number;
}

const TICK_US = 10_000; // USER_HZ = 100 on Linux

/** utime + stime of one /proc stat line, in µs (fields 14 and 15; the comm field may hold spaces). */
function statCpuUs(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

/** The process and its children (node:cluster workers), per thread; null where /proc is not available. */
function processTreeCpu(pid: number): ProcessCpu | null {
  try {
    const total: ProcessCpu = { mainUs: 0, otherUs: 0, switches: 0 };
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    for (const id of [pid, ...(children === '' ? [] : children.split(' ').map(Number))]) {
      for (const tid of readdirSync(`/proc/${id}/task`)) {
        const us = statCpuUs(readFileSync(`/proc/${id}/task/${tid}/stat`, 'utf8'));
        if (Number(tid) === id) total.mainUs += us;
        else total.otherUs += us;
        for (const [, count] of readFileSync(`/proc/${id}/task/${tid}/status`, 'utf8').matchAll(
          /ctxt_switches:\s+(\d+)/g,
        )) {
          total.switches += Number(count);
        }
      }
    }
    return total;
  } catch {
    return null;
  }
}

/** Busy and total CPU time of the whole machine (/proc/stat), in ticks: how saturated the cores were. */
function machineCpu(): { busy: number; total: number } | null {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const idle = fields[3]! + fields[4]!;
    const total = fields.slice(0, 8).reduce((a, b) => a + b, 0);
    return { busy: total - idle, total };
  } catch {
    return null;
  }
}

/** Where the CPU went during a timed run, in µs per completed request. */
export interface RequestCpu {
  /** The gateway's JavaScript threads (main thread of each process). */
  gatewayMainUs: number;
  /** The gateway's other threads: the libuv pool (Ed25519 verify) and V8's helpers (GC). */
  gatewayOtherUs: number;
  /** The load generator (this process, whole). */
  clientUs: number;
  /** Context switches of the gateway's threads. */
  gatewaySwitches: number;
  /** Share of the machine's cores busy during the run (every process, other users' included). */
  machineBusy: number;
}

export type LoadClient = 'autocannon' | 'raw';

export interface GateRejectsResult {
  perSecond: number;
  requests: number;
  statusCounts: Record<string, number>;
  p99Ms: number;
  cpu: RequestCpu | null;
}

/**
 * Signed requests that pass gates 1-3 and are rejected by gate 4 (a dependency cycle), over HTTP with
 * keep-alive (32 connections, one request in flight on each) against a gateway in its own process (or
 * `processes` node:cluster workers sharing its port). The load comes from this process: autocannon, or
 * the lighter bench/keepalive-load.ts sending the same request bytes (`client: 'raw'`).
 * 500 bodies from 64 keys are signed up front, so client signing is not part of the figure.
 */
export async function benchGateRejects(
  processes = 1,
  client: LoadClient = 'autocannon',
  /** `bare`: the floor, a bare Koa server reading, parsing, canonicalising and verifying the same bodies. */
  target: 'gateway' | 'bare' = 'gateway',
): Promise<GateRejectsResult> {
  const server = spawn(
    process.execPath,
    [
      ...(process.env.BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'] : []),
      // BENCH_PERF=FILE: `perf record` of the gateway's CPU time (not wall time) during the timed run.
      ...(process.env.BENCH_PERF ? ['--perf-basic-prof'] : []), // also leaves V8's isolate-*.log here
      // BENCH_GATE_SERVER: another server script (an older checkout's bench/gate-server.ts, to compare with).
      '--import',
      'tsx',
      process.env.BENCH_GATE_SERVER ?? 'bench/gate-server.ts',
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, BENCH_GATE_PROCESSES: String(processes), BENCH_GATE_BARE: target === 'bare' ? '1' : '' },
    },
  );
  try {
    const [chunk] = (await once(server.stdout, 'data')) as [Buffer];
    const url = `http://127.0.0.1:${chunk.toString().trim()}`;
    const requests = signedCycleRequests();
    const run = async (seconds: number) => {
      if (client === 'raw') return keepAliveLoad(url, requests, { connections: 32, seconds });
      const result = await autocannon({
        url,
        connections: 32,
        duration: seconds,
        requests: requests as autocannon.Request[],
      });
      const statusCounts: Record<string, number> = {};
      for (const [code, count] of Object.entries(result.statusCodeStats ?? {})) statusCounts[code] = count.count ?? 0;
      return {
        perSecond: result.requests.average,
        requests: result.requests.total,
        statusCounts,
        p99Ms: result.latency.p99,
      };
    };
    // Warm-up: key caches, and JIT tiers (each of several processes sees only its share of the requests).
    await run(2);
    const serverBefore = processTreeCpu(server.pid!);
    const machineBefore = machineCpu();
    const clientBefore = process.cpuUsage();
    const perf = process.env.BENCH_PERF
      ? spawn(
          'perf',
          [
            'record',
            '-q',
            '-e',
            'cpu-clock',
            '-F',
            '1999',
            '-g',
            '-p',
            String(server.pid),
            '-o',
            process.env.BENCH_PERF,
          ],
          { stdio: 'ignore' },
        )
      : undefined;
    const result = await run(DURATION_S);
    if (perf) {
      perf.kill('SIGINT');
      await once(perf, 'exit');
    }
    const clientCpu = process.cpuUsage(clientBefore);
    const serverAfter = processTreeCpu(server.pid!);
    const machineAfter = machineCpu();
    const n = Math.max(1, result.requests);
    const cpu =
      serverBefore && serverAfter && machineBefore && machineAfter
        ? {
            gatewayMainUs: (serverAfter.mainUs - serverBefore.mainUs) / n,
            gatewayOtherUs: (serverAfter.otherUs - serverBefore.otherUs) / n,
            clientUs: (clientCpu.user + clientCpu.system) / n,
            gatewaySwitches: (serverAfter.switches - serverBefore.switches) / n,
            machineBusy: (machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total),
          }
        : null;
    return {
      perSecond: result.perSecond,
      requests: result.requests,
      statusCounts: result.statusCounts,
      p99Ms: result.p99Ms,
      cpu,
    };
  } finally {
    server.kill();
  }
}

/** The bench's requests: signed, passing gates 1-3, refused by gate 4 (steps a and b depend on each other). */
function signedCycleRequests(): LoadRequest[] {
  const keys = Array.from({ length: 64 }, () => generateKeyPair());
  return Array.from({ length: 500 }, (_, i) => {
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
}

/** One line: where a request's CPU went. */
export function describeRequestCpu(cpu: RequestCpu | null): string {
  if (cpu === null) return 'CPU per request: n/a (no /proc)';
  const f = (us: number) => us.toFixed(0);
  return (
    `CPU per request: gateway JS thread(s) ${f(cpu.gatewayMainUs)} µs + gateway other threads (verify, GC) ` +
    `${f(cpu.gatewayOtherUs)} µs + client ${f(cpu.clientUs)} µs = ${f(requestCpuUs(cpu))} µs; gateway context switches ` +
    `${cpu.gatewaySwitches.toFixed(1)}; cores busy ${(cpu.machineBusy * 100).toFixed(0)}%`
  );
}

const requestCpuUs = (cpu: RequestCpu) => cpu.gatewayMainUs + cpu.gatewayOtherUs + cpu.clientUs;

/**
 * The most the same CPU costs allow on `cores` cores nobody else uses, over one core's verify rate: the cores' time
 * over a request's CPU (gateway and client), capped by the JavaScript thread(s) of `processes` gateway processes.
 * An upper bound (it assumes every core kept busy, which one process does not manage: see "cores busy"); unlike
 * the rate ratio it holds when other work shares the machine.
 */
export function cpuBoundRatio(cpu: RequestCpu, verifyCpuUs: number, cores: number, processes: number): number {
  const perSecond = Math.min(cores / requestCpuUs(cpu), processes / cpu.gatewayMainUs);
  return perSecond * verifyCpuUs;
}
