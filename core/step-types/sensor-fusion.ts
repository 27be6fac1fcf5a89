/**
 * `sensor_fusion` steps (docs/protocol.md §1.2, §2.10): robust fusion of the signed IoT readings of one quantity
 * over a cell, its k-ring and a window (core/sensor-fusion.ts).
 */
import { z } from 'zod';
import { fail, pass } from '../check.js';
import { sensorFusionCost } from '../pricing.js';
import { cellEpochs, fusionCells, fusionWindow, MAX_FUSION_RINGS } from '../sensor-fusion.js';
import { QUANTITY_NAMES } from '../telemetry.js';
import { sensorFusionRun } from './run/sensor-fusion.js';
import { defineStepType } from './spec.js';

export type { SensorFusionStepInput } from './run/sensor-fusion.js';

export const sensorFusion = defineStepType({
  type: 'sensor_fusion',
  fields: {
    // The quantity fused (required) and the k-ring around the cell.
    quantity: z.enum(QUANTITY_NAMES).optional(),
    rings: z.int().min(0).max(MAX_FUSION_RINGS).optional(),
  },
  check: (step) =>
    step.quantity === undefined
      ? fail('invalid_request', `step "${step.id}": a sensor_fusion step needs a quantity`)
      : null,
  minHardwareTier: 2,
  requiredTools: () => [],
  ...sensorFusionRun,
  // The cell-epochs the step covers; its window is checked here, before anything runs.
  worstCase: (step, context) => {
    const window = fusionWindow({ ...step.context, job_epoch: context.epoch }, context.epochGenesisMs, context.epochMs);
    if (!window.ok) return fail(window.error, `step "${step.id}": ${window.detail}`);
    const cells = fusionCells(step.context?.h3_cell ?? context.jobCell, step.rings ?? 0).length;
    return pass({ cell_epochs: cellEpochs(cells, window.value) });
  },
  price: ({ cell_epochs }: { cell_epochs: number }) => sensorFusionCost(cell_epochs),
  // It writes no record of its own: its output names the signed readings it fused (`record_ids`).
  records: { collection: 'telemetry', payloadTypes: [] },
  output: z
    .looseObject({
      quantity: z.string(),
      unit: z.string(),
      h3_cell: z.string(),
      rings: z.int(),
      cells: z.array(z.string()),
      window: z.looseObject({ from: z.string(), to: z.string(), epoch_from: z.int(), epoch_to: z.int() }),
      method: z.string(),
      value: z.number(),
      record_ids: z.array(z.string()),
      merkle_root: z.string(),
      cell_epochs: z.int(),
    })
    .describe('sensor_fusion output'),
  docs: {
    runs: 'robust fusion of signed IoT readings (`POST /v1/telemetry`) over a cell, its k-ring and a window (§2.10)',
    state: 'available',
  },
});
