import type { ErrorCode } from './errors.js';

/**
 * Error bodies of the OpenAI-compatible routes in OpenAI's own shape (`{ error: { message, type, param, code } }`),
 * because OpenAI SDKs read those four fields and pick their exception class from the HTTP status. The rest of
 * the API keeps `{ error, detail }`. Where OpenAI has its own code for a condition it is used (and its
 * status, when OpenAI's differs: an unknown model is 404 there); otherwise the code is ours.
 */
export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

interface OpenAiMapping {
  status?: number;
  type: string;
  code: string;
}

/** Conditions OpenAI names itself, with the type and code its API answers them with (the v1 REST API). */
const OPENAI_CODES: Partial<Record<ErrorCode, OpenAiMapping>> = {
  invalid_model: { status: 404, type: 'invalid_request_error', code: 'model_not_found' },
  unauthorized: { type: 'invalid_request_error', code: 'invalid_api_key' },
  rate_limit: { type: 'requests', code: 'rate_limit_exceeded' },
  quota_exceeded: { type: 'insufficient_quota', code: 'insufficient_quota' },
};

/** The failure as an OpenAI error: its status (possibly OpenAI's instead of ours) and body. */
export function openAiError(failure: {
  code: ErrorCode;
  status: number;
  detail?: string | undefined;
  param?: string | undefined;
}): {
  status: number;
  body: OpenAiErrorBody;
} {
  const known = OPENAI_CODES[failure.code];
  const status = known?.status ?? failure.status;
  const type = known?.type ?? (status >= 500 ? 'server_error' : 'invalid_request_error');
  return {
    status,
    body: {
      error: {
        message: failure.detail ?? failure.code,
        type,
        param: failure.param ?? null,
        code: known?.code ?? failure.code,
      },
    },
  };
}
