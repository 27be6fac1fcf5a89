// The page imports MapLibre GL as ./vendor/maplibre-gl.mjs (served from node_modules/maplibre-gl/dist).
export * from 'maplibre-gl';
