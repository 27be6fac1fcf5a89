// The page imports h3-js as ./vendor/h3-js.mjs (served from node_modules/h3-js/dist/browser/h3-js.es.js).
export * from 'h3-js';
