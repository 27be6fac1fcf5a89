/**
 * The `sensor_fusion` step activity (docs/protocol.md §2.10): reads the signed telemetry records of the step's
 * cells and window from a TelemetrySource (the gateway's proof store, or the gateway over HTTP on a swarm
 * worker), keeps the readings that count as evidence (core/telemetry.ts provenReadingOf: written by one of its
 * trusted writers, the node keys of the deployment, signed by their device, plausible) of the quantity whose phenomenon time
 * falls in the window, and fuses them with one vote per principal (core/sensor-fusion.ts). Two different records
 * of one device, quantity and instant are both dropped: neither can be told the true one. No reading: non-retryable `no_readings`, nothing charged. It writes no record of its
 * own: the output names its inputs (record ids, Merkle root) and the writers it trusted (`trusted_writers`), and
 * the job's `compute/job` record binds the output.
 */
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import type { StepRun } from '../../core/job-scheduler.js';
import type { SensorFusionStepInput } from '../../core/job-steps.js';
import { ServiceError } from '../../core/errors.js';
import { isCell } from '../../core/h3-cell.js';
import { sensorFusionCost } from '../../core/pricing.js';
import {
  cellEpochs,
  FUSION_METHOD,
  fuseReadings,
  fusionCells,
  fusionWindow,
  MAX_FUSION_RINGS,
  type FusionReading,
} from '../../core/sensor-fusion.js';
import { fusionWriters, provenReadingOf, QUANTITIES, QUANTITY_NAMES } from '../../core/telemetry.js';
import type { TelemetrySource } from './index.js';

const inputSchema = z.object({
  job_id: z.string().min(1).max(128),
  step_id: z.string().min(1).max(128),
  quantity: z.enum(QUANTITY_NAMES),
  h3_cell: z.string().refine(isCell, 'must be a valid H3 cell'),
  rings: z.int().min(0).max(MAX_FUSION_RINGS),
  job_epoch: z.int().min(0),
  epoch: z.int().min(0).optional(),
  date_from: z.string().optional(),
  date_to: z.string().optional(),
});

export interface FusionStepDeps {
  source: TelemetrySource;
  genesisMs: number;
  epochMs: number;
  nodePk: string;
  /**
   * The only writers whose telemetry records are inputs (docs/protocol.md §2.10 rule 3): on a gateway its own node
   * key and its peers' (SYNC_NODE_KEYS), on a swarm worker its gateways' (GATEWAY_NODE_PK), never a key a record
   * or the telemetry page names. The output names them (`trusted_writers`), and a receipt verifier holds the
   * inputs to them.
   */
  trustedWriters: readonly string[];
}

export async function runSensorFusion(deps: FusionStepDeps, input: SensorFusionStepInput): Promise<StepRun> {
  const started = performance.now();
  try {
    const parsed = inputSchema.safeParse(input);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ServiceError('invalid_request', `${issue?.path.join('.') || 'input'}: ${issue?.message}`);
    }
    const step = parsed.data;
    const window = fusionWindow(step, deps.genesisMs, deps.epochMs);
    if (!window.ok) throw new ServiceError(window.error, window.detail);
    const { fromMs, toMs, epochFrom, epochTo } = window.value;
    const cells = fusionCells(step.h3_cell, step.rings);
    const trustedWriters = fusionWriters(deps.trustedWriters);
    if (trustedWriters.length === 0) throw new ServiceError('step_type_unavailable', 'no trusted telemetry writer');
    // One reading per (device, quantity, instant): the same record read twice counts once; two different records
    // for one instant (an equivocating device, or a writer that disagrees with itself) are both dropped.
    const byInstant = new Map<string, FusionReading | null>();
    for (const cell of cells) {
      const records = await deps.source(cell, epochFrom, epochTo);
      for (const record of records) {
        const proven = provenReadingOf(record, trustedWriters);
        if (!proven.ok) continue;
        const payload = proven.value;
        if (payload.quantity !== step.quantity) continue;
        const at = Date.parse(payload.observed_at);
        if (!(at >= fromMs && at < toMs)) continue;
        const key = `${payload.device_pk}\n${payload.observed_at}`;
        const reading: FusionReading = {
          device_pk: payload.device_pk,
          principal_pk: payload.principal_pk,
          value: payload.value,
          record_id: record.id,
          record_hash: record.record_hash,
        };
        const held = byInstant.get(key);
        if (held === undefined) byInstant.set(key, reading);
        else if (held !== null && (held.record_id !== reading.record_id || held.record_hash !== reading.record_hash)) {
          byInstant.set(key, null);
        }
      }
    }
    const readings = [...byInstant.values()].filter((r): r is FusionReading => r !== null);
    const span = {
      from: new Date(fromMs).toISOString(),
      to: new Date(toMs).toISOString(),
      epoch_from: epochFrom,
      epoch_to: epochTo,
    };
    if (readings.length === 0) {
      throw new ServiceError(
        'no_readings',
        `no signed ${step.quantity} reading in ${cells.length} cell(s) around ${step.h3_cell} from ${span.from} to ${span.to}`,
      );
    }
    const fused = fuseReadings(readings);
    const covered = cellEpochs(cells.length, window.value);
    return {
      output: {
        quantity: step.quantity,
        unit: QUANTITIES[step.quantity].unit,
        h3_cell: step.h3_cell,
        rings: step.rings,
        cells,
        window: span,
        method: FUSION_METHOD,
        ...fused,
        cell_epochs: covered,
        trusted_writers: trustedWriters,
      },
      cost: sensorFusionCost(covered),
      worker_pk: deps.nodePk,
      record_id: null,
      latency_ms: Math.max(0, Math.round(performance.now() - started)),
    };
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error;
    if (error.status < 500) throw ApplicationFailure.nonRetryable(error.detail ?? error.code, error.code);
    throw ApplicationFailure.retryable(error.detail ?? error.code, error.code);
  }
}
