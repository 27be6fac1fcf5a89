/**
 * Names of the schemas the API reference shows as components (`#/components/schemas/<name>`): the ones clients
 * meet in several places or look up by name. Every other request or response schema is named after its
 * operation (`PostV1ComputeRequest`), and a schema nested in a named one is referenced, not repeated.
 */
import type { ZodType } from 'zod';
import { proofRecordSchema } from '../core/proof-record.js';
import { sealSchema } from '../core/seal.js';
import { proofPurchaseSchema } from './routes/store.js';
import { blobStoredSchema, blobUploadRequestSchema } from './schemas/blob-requests.js';
import { chatRequestSchema } from './schemas/chat-request.js';
import { computeRequestSchema, stepSchema } from './schemas/compute-request.js';
import {
  computeFailureSchema,
  computeResponseSchema,
  jobLookupSchema,
  jobSummarySchema,
  recentJobsSchema,
  stepResultSchema,
} from './schemas/compute-response.js';
import {
  ndviResultSchema,
  processResponseSchema,
  scenesResultSchema,
  tileGridSchema,
  tileStatsSchema,
} from './schemas/geo-responses.js';
import { processBodyDocs } from './schemas/param-docs.js';
import { epochsRequestSchema, syncRequestSchema } from './schemas/store-requests.js';
import {
  anchorSchema,
  batchRejectionSchema,
  batchVerdictSchema,
  proofBundleSchema,
  proofPurchaseResponseSchema,
  recordPageSchema,
} from './schemas/store-responses.js';
import {
  chatCompletionSchema,
  earningsSchema,
  heartbeatResponseSchema,
  inferenceStatsSchema,
  marketplaceSchema,
  modelListSchema,
  publicWorkerSchema,
  recentInferencesSchema,
  registeredWorkerSchema,
  swarmStatusSchema,
  workerListSchema,
} from './schemas/swarm-responses.js';
import {
  errorResponseSchema,
  healthResponseSchema,
  openAiErrorResponseSchema,
  openApiDocumentSchema,
  toolListSchema,
  toolSchema,
} from './schemas/service-responses.js';
import { heartbeatRequestSchema, registerRequestSchema } from './schemas/worker-requests.js';
import { openEoErrorSchema } from './openeo/schemas.js';

export const NAMED_SCHEMAS: ReadonlyArray<readonly [ZodType, string]> = [
  [errorResponseSchema, 'Error'],
  [openAiErrorResponseSchema, 'OpenAiError'],
  [openEoErrorSchema, 'OpenEoError'],
  [healthResponseSchema, 'Health'],
  [openApiDocumentSchema, 'OpenApiDocument'],
  [computeRequestSchema, 'ComputeRequest'],
  [stepSchema, 'ComputeStep'],
  [computeResponseSchema, 'ComputeResponse'],
  [computeFailureSchema, 'ComputeFailure'],
  [stepResultSchema, 'StepResult'],
  [jobSummarySchema, 'JobSummary'],
  [recentJobsSchema, 'RecentJobs'],
  [jobLookupSchema, 'JobLookup'],
  [chatRequestSchema, 'ChatCompletionRequest'],
  [chatCompletionSchema, 'ChatCompletion'],
  [modelListSchema, 'ModelList'],
  [tileGridSchema, 'TileGrid'],
  [tileStatsSchema, 'TileStats'],
  [scenesResultSchema, 'SceneSearchResult'],
  [ndviResultSchema, 'NdviResult'],
  [processBodyDocs, 'ImageryProcessRequest'],
  [processResponseSchema, 'ImageryProcessResult'],
  [swarmStatusSchema, 'SwarmStatus'],
  [marketplaceSchema, 'ModelMarketplace'],
  [recentInferencesSchema, 'RecentInferences'],
  [inferenceStatsSchema, 'InferenceStats'],
  [registerRequestSchema, 'WorkerRegistration'],
  [heartbeatRequestSchema, 'WorkerHeartbeat'],
  [publicWorkerSchema, 'Worker'],
  [workerListSchema, 'WorkerList'],
  [registeredWorkerSchema, 'RegisteredWorker'],
  [heartbeatResponseSchema, 'HeartbeatAnswer'],
  [earningsSchema, 'WorkerEarnings'],
  [toolSchema, 'Tool'],
  [toolListSchema, 'ToolList'],
  [proofRecordSchema, 'ProofRecord'],
  [sealSchema, 'Seal'],
  [anchorSchema, 'Anchor'],
  [proofBundleSchema, 'ProofBundle'],
  [proofPurchaseSchema, 'ProofPurchaseRequest'],
  [proofPurchaseResponseSchema, 'ProofPurchase'],
  [recordPageSchema, 'RecordPage'],
  [syncRequestSchema, 'StoreSyncRequest'],
  [epochsRequestSchema, 'StoreEpochsRequest'],
  [batchVerdictSchema, 'BatchVerdict'],
  [batchRejectionSchema, 'BatchRejection'],
  [blobUploadRequestSchema, 'BlobUpload'],
  [blobStoredSchema, 'BlobStored'],
];
