/**
 * Which registered workers actually take work (docs/architecture.md): a registration is only a claim, and a
 * key costs nothing, so routing counts a worker only while its process polls the step's task queue. A swarm
 * worker polls Temporal under the identity `geofabric-worker:<pk>` (bin/worker.ts), and the gateway reads the
 * queue's pollers (Temporal DescribeTaskQueue) before it sends a step there.
 */

const IDENTITY = /^geofabric-worker:([0-9a-f]{64})$/;

/** A poller counts while it polled this recently: Temporal long polls last about a minute. */
export const ACTIVE_POLLER_MS = 120_000;

/** The Temporal Worker identity of the swarm worker with key `pk`. */
export const workerIdentity = (pk: string): string => `geofabric-worker:${pk}`;

/** The worker key in a poller identity; null for any other poller (a gateway, a foreign process). */
export function workerPkOfIdentity(identity: string): string | null {
  return IDENTITY.exec(identity)?.[1] ?? null;
}

const GATEWAY_IDENTITY = /^geofabric-gateway:([0-9a-f]{64})$/;

/** The Temporal Worker identity of the gateway with node key `pk`: the seal run finds the gateways by it. */
export const gatewayIdentity = (pk: string): string => `geofabric-gateway:${pk}`;

/** The keys of the gateways among `pollers` that polled within ACTIVE_POLLER_MS of `nowMs`. */
export function activeGateways(
  pollers: readonly { identity: string; lastAccessMs: number | null }[],
  nowMs: number,
): Set<string> {
  const pks = new Set<string>();
  for (const poller of pollers) {
    const pk = GATEWAY_IDENTITY.exec(poller.identity)?.[1];
    if (pk !== undefined && poller.lastAccessMs !== null && nowMs - poller.lastAccessMs <= ACTIVE_POLLER_MS)
      pks.add(pk);
  }
  return pks;
}

/** The keys of the workers that polled within ACTIVE_POLLER_MS of `nowMs` (a poller clock ahead counts as now). */
export function activePollers(
  pollers: readonly { identity: string; lastAccessMs: number | null }[],
  nowMs: number,
): Set<string> {
  const pks = new Set<string>();
  for (const poller of pollers) {
    const pk = workerPkOfIdentity(poller.identity);
    if (pk !== null && poller.lastAccessMs !== null && nowMs - poller.lastAccessMs <= ACTIVE_POLLER_MS) pks.add(pk);
  }
  return pks;
}
