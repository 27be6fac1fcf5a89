// The workflow bundle's entry: every workflow type a Geofabric worker serves.
export { engineProbe } from './engine-probe.js';
