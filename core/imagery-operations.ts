/** `image_process` operations (docs/protocol.md §2.5). */
export const IMAGE_OPERATIONS = [
  'ndvi',
  'cloud_mask',
  'scene_search',
  'atmospheric_correction',
  'flood_classify',
  'band_math',
] as const;
export type ImageOperation = (typeof IMAGE_OPERATIONS)[number];
