/**
 * openEO's error shape and codes (docs/protocol.md §16): the openEO routes answer `{ id, code, message, links }`
 * with the standard codes of the openEO API's errors.json, because openEO clients read `code` (the Python client
 * raises it as `OpenEoApiError.code`). Process exceptions named in the process definitions (`DimensionNotAvailable`,
 * `ArrayElementNotAvailable` …) travel the same way. A refusal made before an openEO route runs (a gate, the body
 * reader) is a ServiceError of our table, mapped here to its openEO code where openEO has one.
 */
import { ERROR_STATUS, ServiceError, type ErrorCode } from '../errors.js';

/** The codes of errors.json (openEO API 1.2.0) this back-end answers, with their HTTP status. */
export const OPENEO_ERROR_STATUS = {
  Internal: 500,
  NotFound: 404,
  FeatureUnsupported: 501,
  RequestTimeout: 408,
  BudgetInvalid: 400,
  CollectionNotFound: 404,
  ContentTypeInvalid: 400,
  ProcessGraphMissing: 400,
  ProcessGraphInvalid: 400,
  ProcessGraphComplexity: 400,
  ProcessUnsupported: 400,
  ProcessParameterUnsupported: 400,
  ProcessParameterInvalid: 400,
  ProcessParameterRequired: 400,
  // Batch jobs (docs/protocol.md §16.11).
  JobNotFound: 404,
  JobLocked: 400,
  JobNotFinished: 400,
  NoDataForUpdate: 400,
  // Secondary web services (docs/protocol.md §16.10).
  ServiceNotFound: 404,
  ServiceUnsupported: 400,
  ServiceConfigUnsupported: 400,
  ServiceConfigInvalid: 400,
  ServiceConfigRequired: 400,
  InfrastructureBusy: 503,
  PaymentRequired: 402,
  AuthenticationRequired: 401,
  AuthenticationSchemeInvalid: 403,
  TokenInvalid: 403,
  CredentialsInvalid: 403,
  PermissionsInsufficient: 403,
} as const;
export type OpenEoCode = keyof typeof OPENEO_ERROR_STATUS;

/** Our codes that openEO names itself, and the openEO code (with its status) they are answered as. */
const FROM_SERVICE: Partial<Record<ErrorCode, OpenEoCode>> = {
  unauthorized: 'AuthenticationRequired',
  not_found: 'NotFound',
  request_timeout: 'RequestTimeout',
  unsupported_media_type: 'ContentTypeInvalid',
  budget_exceeded: 'PaymentRequired',
  internal_error: 'Internal',
  delegation_invalid: 'PermissionsInsufficient',
  delegation_required: 'PermissionsInsufficient',
  tool_not_permitted: 'PermissionsInsufficient',
};

/** Our table code nearest to an openEO status, for logs and metrics (and the `svc` shape, never used here). */
function nearestServiceCode(status: number): ErrorCode {
  if (status === 401 || status === 403) return 'unauthorized';
  if (status === 402) return 'budget_exceeded';
  if (status === 404) return 'not_found';
  if (status === 408) return 'request_timeout';
  if (status === 501) return 'method_not_allowed';
  if (status >= 500) return 'internal_error';
  return 'invalid_request';
}

/**
 * An openEO error: a standard code of OPENEO_ERROR_STATUS, or a process exception (any other word, 400). It is a
 * ServiceError (of the nearest table code) so every layer that handles those handles it; the openEO error writer
 * reads `openEoCode` and `openEoStatus`.
 */
export class OpenEoError extends ServiceError {
  readonly openEoCode: string;
  readonly openEoStatus: number;

  constructor(code: OpenEoCode | (string & {}), message: string, status?: number) {
    const known = (OPENEO_ERROR_STATUS as Record<string, number>)[code];
    const openEoStatus = status ?? known ?? 400;
    super(nearestServiceCode(openEoStatus), message);
    this.name = 'OpenEoError';
    this.openEoCode = code;
    this.openEoStatus = openEoStatus;
  }
}

export interface OpenEoErrorBody {
  id: string;
  code: string;
  message: string;
  links: { href: string; rel: string; type?: string; title?: string }[];
}

/**
 * A failure as openEO's error: an OpenEoError keeps its code; a ServiceError takes the openEO code openEO has for
 * it, or keeps ours (openEO allows back-end codes) with our status. `id` is the request id, as openEO advises,
 * so a user can quote it.
 */
export function openEoError(failure: ServiceError, requestId: string): { status: number; body: OpenEoErrorBody } {
  if (failure instanceof OpenEoError) {
    return {
      status: failure.openEoStatus,
      body: { id: requestId, code: failure.openEoCode, message: failure.detail ?? failure.openEoCode, links: [] },
    };
  }
  const mapped = FROM_SERVICE[failure.code];
  const status = mapped ? OPENEO_ERROR_STATUS[mapped] : failure.status;
  return {
    status,
    body: { id: requestId, code: mapped ?? failure.code, message: failure.detail ?? failure.code, links: [] },
  };
}

/** True when `code` at `status` is an answer openEoError can give: a standard code, or ours at its table status. */
export function isOpenEoAnswer(code: string, status: number): boolean {
  const standard = (OPENEO_ERROR_STATUS as Record<string, number>)[code];
  if (standard !== undefined) return standard === status;
  const ours = (ERROR_STATUS as Record<string, number>)[code];
  if (ours !== undefined) return ours === status && FROM_SERVICE[code as ErrorCode] === undefined;
  // A process exception of a process definition: a word, always 400.
  return status === 400 && /^[A-Z][A-Za-z]+$/.test(code);
}
