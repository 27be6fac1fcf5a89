/**
 * A swarm worker's blob store (store/blob-store.ts `put`): the gateway's, over HTTP (`PUT /store/blobs/{sha256}`,
 * api/routes/store-blobs.ts). bin/worker.ts hands it to its step activities, so a step's large output fields
 * reach the gateway (where finishJob resolves them) and its activity result carries only their references
 * (core/output-blobs.ts, docs/architecture.md payload discipline).
 *
 * `put` resolves only once the gateway answered that it holds every blob: a step never returns a reference to a
 * blob the gateway lacks. A failed upload fails the step attempt: retryably (the gateway unreachable or busy,
 * the worker not registered yet), or for good when the same bytes would be refused again (413 too large, 400).
 */
import { ApplicationFailure } from '@temporalio/common';
import type { BlobOwner, StepBlobSink } from '../../store/blob-store.js';
import { GatewayError, type GatewayClient } from './gateway-client.js';
import { GATEWAY_OUTAGE_WAIT_MS, waitingOutOutages } from './outage-wait.js';

/** Per blob: a few MB over a slow uplink. */
export const BLOB_UPLOAD_TIMEOUT_MS = 60_000;
/** How long one upload waits out the gateway's `retry-after` (429) in all before the attempt fails. */
export const BLOB_RATE_WAIT_MS = 30_000;

export function createGatewayBlobStore(
  gateway: Pick<GatewayClient, 'putBlob'>,
  options: { timeoutMs?: number; rateWaitMs?: number; outageWaitMs?: number } = {},
): StepBlobSink {
  const timeoutMs = options.timeoutMs ?? BLOB_UPLOAD_TIMEOUT_MS;
  const rateWaitMs = options.rateWaitMs ?? BLOB_RATE_WAIT_MS;
  const outageWaitMs = options.outageWaitMs ?? GATEWAY_OUTAGE_WAIT_MS;

  async function upload(id: string, text: string, step: BlobOwner): Promise<void> {
    let waited = 0;
    for (;;) {
      try {
        // A gateway out of reach is waited out (outage-wait.ts): the same upload is safe to send again.
        const stored = await waitingOutOutages(
          () => gateway.putBlob(id, text, step, timeoutMs),
          isOutage,
          outageWaitMs,
        );
        if (stored.sha256 !== id) {
          throw ApplicationFailure.retryable(`blob ${id}: the gateway answered for another blob`, 'invalid_response');
        }
        return;
      } catch (error) {
        // The per-address body budget (a few MB take a whole bucket) refills within seconds: wait, not fail.
        const wait = error instanceof GatewayError && error.status === 429 ? (error.retryAfterMs ?? 1000) : undefined;
        if (wait === undefined || waited + wait > rateWaitMs) throw uploadFailure(id, error);
        waited += wait;
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  return {
    async put(blobs, step) {
      // One at a time: each is megabytes, and the step waits for all of them anyway. Each is sent on every
      // attempt (no memory of earlier ones): only the gateway's answer says it holds a blob.
      for (const [id, text] of blobs) await upload(id, text, step);
    },
  };
}

/** No answer, or the gateway's own outage (its store down): nothing about the blob, so worth waiting out. */
const isOutage = (error: unknown) => error instanceof GatewayError && (error.status === 0 || error.status >= 500);

/** Refusals the same bytes would meet again are final; anything else may pass on a later attempt. */
function uploadFailure(id: string, error: unknown): ApplicationFailure {
  if (error instanceof ApplicationFailure) return error;
  const message = `uploading blob ${id} to the gateway failed: ${(error as Error).message}`;
  if (error instanceof GatewayError) {
    // No answer, or the gateway's own outage: the blob store is out of reach for now. Typed as that (503 with
    // retry-after, docs/protocol.md §7), a job whose attempts all met it answers a transient error the client
    // may send again, not a 502 as if the step itself had failed.
    if (isOutage(error)) {
      return ApplicationFailure.create({ message, type: 'store_unavailable', nonRetryable: false, cause: error });
    }
    const final = error.status === 413 || error.status === 400;
    return ApplicationFailure.create({ message, type: error.code, nonRetryable: final, cause: error });
  }
  return ApplicationFailure.create({ message, type: 'blob_upload_failed', nonRetryable: false });
}
