/** `image_process` operations (docs/protocol.md §2.5). `flood_classify` exists only as an MCP tool for now. */
export const IMAGE_OPERATIONS = ['ndvi', 'cloud_mask', 'scene_search', 'atmospheric_correction'] as const;
export type ImageOperation = (typeof IMAGE_OPERATIONS)[number];
export const PLANNED_IMAGE_OPERATIONS = ['flood_classify'] as const;
