import { type ApiError, UI_API_VERSION } from '../api/ui-api.js';

/**
 * Every error the UI server answers with (ApiError `code`), its HTTP status and meaning. Documented in
 * packages/ui/README.md; a test fails on a code used here and not documented there.
 */
export const UI_API_ERRORS = {
  WEFT_UI_ERR_UNKNOWN_JOB: { status: 404, meaning: 'no run of this job id in the event log' },
  WEFT_UI_ERR_NOT_FOUND: { status: 404, meaning: 'no such API route' },
  WEFT_UI_ERR_METHOD_NOT_ALLOWED: { status: 405, meaning: 'the UI is read-only: GET and HEAD only' },
  WEFT_UI_ERR_UNAUTHORIZED: { status: 401, meaning: 'a token is configured and the request carries no matching one' },
  WEFT_UI_ERR_HOST_NOT_ALLOWED: { status: 403, meaning: 'no token is configured (loopback only) and the request names a host that is not loopback (DNS rebinding)' },
  WEFT_UI_ERR_EVENT_LOG: { status: 503, meaning: 'the event log (or the cluster registry) could not be read' },
  WEFT_UI_ERR_INTERNAL: { status: 500, meaning: 'a bug in the UI server' },
} as const;

export type UiApiErrorCode = keyof typeof UI_API_ERRORS;

/** The JSON body of an error answer. */
export function apiError(code: UiApiErrorCode, message: string): ApiError {
  return { version: UI_API_VERSION, error: { code, message } };
}
