// The workflow bundle's entry: every workflow type a Geofabric worker serves.
export { engineProbe } from './engine-probe.js';
export { computeJob } from './compute-job.js';
export { sealEpoch } from './seal-epoch.js';
export { openEoBatchJob } from './openeo-batch-job.js';
