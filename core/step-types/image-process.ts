/**
 * `image_process` steps (docs/protocol.md §1.2, §2.5): one imagery operation over a cell's Sentinel-2 L2A scene,
 * the same operations `POST /v1/imagery/process` runs.
 */
import { z } from 'zod';
import { parseBandExpression } from '../band-math.js';
import { fail, pass } from '../check.js';
import { IMAGE_OPERATIONS } from '../imagery-operations.js';
import { cellMegapixels, imageCost } from '../pricing.js';
import { DEFAULT_IMAGE_OPERATION, imageProcessRun } from './run/image-process.js';
import { defineStepType } from './spec.js';

export { DEFAULT_IMAGE_OPERATION, type ImageStepInput } from './run/image-process.js';

export const imageProcess = defineStepType({
  type: 'image_process',
  fields: {
    operation: z.string().min(1).optional(),
    center_cell: z.string().optional(),
    // A classify-endpoint model (flood_classify), not a registry model.
    model: z.string().min(1).optional(),
    // band_math: an expression of Sentinel-2 bands, e.g. (B08-B04)/(B08+B04); `check` parses it (core/band-math.ts),
    // so a refusal says what is wrong and where.
    expression: z.string().optional(),
  },
  check: (step) => {
    if (step.model !== undefined && step.operation !== 'flood_classify') {
      return fail('invalid_request', `step "${step.id}": a model applies to the flood_classify operation only`);
    }
    const operation = step.operation ?? DEFAULT_IMAGE_OPERATION;
    if (!(IMAGE_OPERATIONS as readonly string[]).includes(operation)) {
      return fail('invalid_request', `step "${step.id}": unknown image_process operation "${operation}"`);
    }
    if (operation === 'band_math') {
      const parsed = parseBandExpression(step.expression);
      if (!parsed.ok) return fail(parsed.error, `step "${step.id}": ${parsed.detail}`);
    } else if (step.expression !== undefined) {
      return fail('invalid_request', `step "${step.id}": an expression applies to the band_math operation only`);
    }
    return null;
  },
  // Scenes are large: a laptop worker does not read them (docs/protocol.md §1.6).
  minHardwareTier: 2,
  requiredTools: () => [],
  ...imageProcessRun,
  // The cell's megapixels at 10 m (`center_cell`, else the job cell); the activity charges the pixels it read.
  worstCase: (step, { jobCell }) => pass({ megapixels: cellMegapixels(step.center_cell ?? jobCell) }),
  price: ({ megapixels }: { megapixels: number }) => imageCost(megapixels),
  records: { collection: 'imagery', payloadTypes: IMAGE_OPERATIONS.map((operation) => `imagery/${operation}`) },
  output: z
    .looseObject({
      operation: z.enum(IMAGE_OPERATIONS),
      h3_cell: z.string(),
      result: z.record(z.string(), z.unknown()),
      record_id: z.string(),
    })
    .describe('image_process output: the operation result as POST /v1/imagery/process returns it'),
  docs: {
    runs:
      'Sentinel-2 L2A scenes from a public STAC catalog: ' +
      IMAGE_OPERATIONS.map((operation) => `\`${operation}\``).join(', ') +
      ' (§2.5)',
    state: 'available',
  },
});
