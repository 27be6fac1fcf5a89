export { GeofabricClient, GeofabricError, type ClientOptions, type SubmitOptions } from './client.js';
export { canonicalize, CanonicalJsonError } from './jcs.js';
export { publicKeyOf, sign, verify, sha256Hex } from './crypto.js';
export {
  jobIdFromSignature,
  RECEIPT_CHECKS,
  signingMessage,
  verifyReceipt,
  type ReceiptCheck,
  type ReceiptCheckName,
  type ReceiptVerdict,
  type VerifyReceiptOptions,
} from './receipt.js';
export { QUANTITIES, readingStatement, signReading, type ReadingFields } from './telemetry.js';
export {
  recomputeLine,
  recomputeReceipt,
  type RecomputeKind,
  type RecomputeOptions,
  type RecomputeResult,
  type StepRecomputation,
} from './recompute.js';
