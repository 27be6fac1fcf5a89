import cluster from 'node:cluster';
import type { Logger } from 'pino';
import type { Config } from './config.js';

/**
 * WEB_CONCURRENCY=N: the gateway on N processes of one machine (node:cluster; the primary holds the listening
 * sockets and hands connections round-robin to the workers), so request JavaScript runs on every core
 * (docs/operations.md "All cores"). Every process opens the same stores: SQLite in WAL with a busy timeout (one
 * writer at a time across processes, seqs read and assigned under the write lock), or the one MongoDB.
 *
 * Work that must happen once per node runs in worker 0 only, the "leader": the embedded auto-sealer, the sync
 * agent, settlement and anchoring sweeps, and the perception and governance MCP servers (an agent's audit chain
 * is appended under an in-process lock, so one process owns it). A worker that dies is forked again under the
 * same index, so a leader is always back; SIGTERM/SIGINT to the primary drains every worker, then it exits.
 */

/** The env var the primary sets on each worker: its index, 0 … N-1 (0 is the leader). */
export const WORKER_INDEX_ENV = 'GEOFABRIC_WORKER_INDEX';

/** This process's share of the node: leader or not, and its index when it is one of several. */
export interface ProcessRole {
  leader: boolean;
  /** 0 … N-1 under WEB_CONCURRENCY > 1; undefined when the gateway runs as one process. */
  index: number | undefined;
}

export function processRole(): ProcessRole {
  if (!cluster.isWorker) return { leader: true, index: undefined };
  const index = Number(process.env[WORKER_INDEX_ENV] ?? '0');
  return { leader: index === 0, index };
}

/** True in the primary of WEB_CONCURRENCY > 1: it forks the workers and serves nothing itself. */
export const runsAsPrimary = (config: Config): boolean => config.webConcurrency > 1 && cluster.isPrimary;

/** How soon a worker that died is forked again; doubled per quick death, capped, so a crash loop is slow. */
const RESTART_MS = 1000;
const MAX_RESTART_MS = 30_000;

/**
 * The primary: forks `config.webConcurrency` workers, re-forks one that dies (unless stopping), forwards
 * SIGTERM/SIGINT and exits once all have exited (1 if any exited uncleanly). `prepare` has already run the
 * one-time start work (key files, schema) so workers do not race on it.
 */
export function runPrimary(config: Config, logger: Logger): void {
  const n = config.webConcurrency;
  let stopping = false;
  let failed = false;
  const indexOf = new Map<number, number>(); // cluster worker id → index
  const delay = new Map<number, number>(); // index → next restart delay

  const fork = (index: number) => {
    const worker = cluster.fork({ [WORKER_INDEX_ENV]: String(index) });
    indexOf.set(worker.id, index);
    const startedAt = Date.now();
    worker.on('exit', (code, signal) => {
      indexOf.delete(worker.id);
      if (stopping) {
        if (code !== 0) failed = true;
        if (indexOf.size === 0) process.exit(failed ? 1 : 0);
        return;
      }
      const wait = Date.now() - startedAt > MAX_RESTART_MS ? RESTART_MS : (delay.get(index) ?? RESTART_MS);
      delay.set(index, Math.min(wait * 2, MAX_RESTART_MS));
      logger.error({ worker: index, code, signal, restart_in_ms: wait }, 'gateway worker exited; forking it again');
      setTimeout(() => {
        if (!stopping) fork(index);
      }, wait).unref();
    });
  };
  for (let index = 0; index < n; index++) fork(index);
  logger.info({ workers: n, pid: process.pid }, 'gateway primary: forked the workers (WEB_CONCURRENCY)');

  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'gateway primary: stopping the workers');
    if (indexOf.size === 0) process.exit(0);
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal);
    // Each worker bounds its own drain (SHUTDOWN_DRAIN_SECONDS + 15 s); this is the backstop.
    setTimeout(() => process.exit(1), config.shutdownDrainMs + 20_000).unref();
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}
