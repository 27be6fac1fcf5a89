/** The public map styles the tile proxy serves (docs/protocol.md §2.4); none needs an API key. */
export const TILE_STYLES = ['osm-bright', 'osm-standard', 'dark', 'terrain', 'satellite'] as const;
export type TileStyle = (typeof TILE_STYLES)[number];

export const MIN_ZOOM = 0;
export const MAX_ZOOM = 20;
