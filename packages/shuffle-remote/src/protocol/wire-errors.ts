import { ShuffleError, type ShuffleErrorCode, type ShuffleErrorContext, isShuffleError, isShuffleErrorCode } from '@weft/shuffle-api';

/**
 * The errors of the shuffle server's HTTP API. Each has an explicit, stable number (`wire`), sent in
 * the JSON error body next to the SHF code; numbers are never reused for another meaning, and new
 * errors take new numbers. `httpStatus` is what the response carries; `retryable` tells clients whether
 * the same request may succeed later.
 *
 * Error body: `{"code": "SHF_ERR_…", "wire": <number>, "message": "…"}`.
 */
export interface WireErrorKind {
  readonly wire: number;
  readonly httpStatus: number;
  readonly code: ShuffleErrorCode;
  readonly retryable: boolean;
}

export const WireError = {
  /** A malformed id, query, header or JSON body. */
  BAD_REQUEST: { wire: 1, httpStatus: 400, code: 'SHF_ERR_INVALID_ARGUMENT', retryable: false },
  /** No job token, or a malformed or forged one. */
  UNAUTHORIZED: { wire: 2, httpStatus: 401, code: 'SHF_ERR_UNAUTHORIZED', retryable: false },
  /** A valid token for another job. */
  FORBIDDEN: { wire: 3, httpStatus: 403, code: 'SHF_ERR_FORBIDDEN', retryable: false },
  /** No committed partition (never pushed, not committed, released, or its data is gone). */
  PARTITION_NOT_FOUND: { wire: 4, httpStatus: 404, code: 'SHF_ERR_PARTITION_NOT_FOUND', retryable: false },
  /** No such route. */
  NO_SUCH_ROUTE: { wire: 5, httpStatus: 404, code: 'SHF_ERR_INVALID_ARGUMENT', retryable: false },
  /** The route exists, not with this method. */
  METHOD_NOT_ALLOWED: { wire: 6, httpStatus: 405, code: 'SHF_ERR_INVALID_ARGUMENT', retryable: false },
  /** Another attempt of the partition committed first; this attempt's data is removed. */
  COMMIT_CONFLICT: { wire: 7, httpStatus: 409, code: 'SHF_ERR_COMMIT_CONFLICT', retryable: false },
  /** The body is larger than the server's maxBodyBytes. */
  BODY_TOO_LARGE: { wire: 8, httpStatus: 413, code: 'SHF_ERR_LIMIT_EXCEEDED', retryable: false },
  /** The pushed bytes are not a well-formed partition data object (bad block, checksum, index or footer; truncated). */
  MALFORMED_BODY: { wire: 9, httpStatus: 400, code: 'SHF_ERR_DATA_CORRUPTED', retryable: false },
  /** The server already serves maxConcurrentStreams streams; try again shortly (Retry-After). */
  TOO_MANY_STREAMS: { wire: 10, httpStatus: 503, code: 'SHF_ERR_LIMIT_EXCEEDED', retryable: true },
  /** The server is shutting down and takes no new requests. */
  SHUTTING_DOWN: { wire: 11, httpStatus: 503, code: 'SHF_ERR_STORAGE_UNAVAILABLE', retryable: true },
  /** The server's disk, S3 tier or Redis failed. */
  STORAGE_UNAVAILABLE: { wire: 12, httpStatus: 503, code: 'SHF_ERR_STORAGE_UNAVAILABLE', retryable: true },
  /** The request (or its body) did not arrive within the server's timeouts. */
  REQUEST_TIMEOUT: { wire: 13, httpStatus: 408, code: 'SHF_ERR_TIMEOUT', retryable: true },
  /**
   * An unexpected server error (a bug, not an outage); details are in the server's log, not in the
   * response. Not retryable: the same request would meet the same bug.
   */
  INTERNAL: { wire: 14, httpStatus: 500, code: 'SHF_ERR_STORAGE_UNAVAILABLE', retryable: false },
  /** A push for an attempt of a partition that another attempt already committed. */
  ALREADY_COMMITTED: { wire: 15, httpStatus: 409, code: 'SHF_ERR_COMMIT_CONFLICT', retryable: false },
  /** The JSON body of a control request is larger than the server accepts. */
  JSON_TOO_LARGE: { wire: 16, httpStatus: 413, code: 'SHF_ERR_LIMIT_EXCEEDED', retryable: false },
  /** Not committed yet, but a producer holds a live lease on an attempt of it: ask again later. */
  PARTITION_PENDING: { wire: 17, httpStatus: 404, code: 'SHF_ERR_PARTITION_NOT_FOUND', retryable: false },
  /** The partition was registered under a job master epoch older than the newest registered in its job; this attempt's data is removed. */
  FENCED: { wire: 18, httpStatus: 409, code: 'SHF_ERR_FENCED', retryable: false },
  /** Redis took the commit index's write, but fewer replicas than the server's `--redis` URL asks for acknowledged it (WAIT). */
  NOT_REPLICATED: { wire: 19, httpStatus: 503, code: 'SHF_ERR_NOT_REPLICATED', retryable: false },
} as const satisfies Record<string, WireErrorKind>;

export type WireErrorName = keyof typeof WireError;

const BY_NUMBER: ReadonlyMap<number, WireErrorKind> = new Map(Object.values(WireError).map((kind) => [kind.wire, kind]));

/** The wire kind of a ShuffleError made by `wireError`, carried in its context. */
const WIRE_CONTEXT_KEY = 'wire';

/** A ShuffleError the server answers with `kind`. */
export function wireError(kind: WireErrorKind, message: string, context: ShuffleErrorContext = {}, cause?: unknown): ShuffleError {
  return new ShuffleError(kind.code, message, {
    retryable: kind.retryable,
    context: { ...context, [WIRE_CONTEXT_KEY]: kind.wire },
    ...(cause === undefined ? {} : { cause }),
  });
}

/** The JSON body of an error response. */
export interface WireErrorBody {
  readonly code: ShuffleErrorCode;
  readonly wire: number;
  readonly message: string;
}

/**
 * Server side, the one mapping from an error to a response: a `wireError` keeps its kind; other
 * ShuffleErrors map by code; anything else is INTERNAL, with a fixed message (the details go to the
 * server's log, never to the client).
 */
export function toWireResponse(error: unknown): { readonly status: number; readonly body: WireErrorBody; readonly kind: WireErrorKind } {
  let kind: WireErrorKind = WireError.INTERNAL;
  let message = 'internal server error';
  if (isShuffleError(error)) {
    const explicit = BY_NUMBER.get(Number(error.context[WIRE_CONTEXT_KEY]));
    kind = explicit ?? kindOfCode(error.code);
    message = kind === WireError.INTERNAL ? message : error.message;
  }
  return { status: kind.httpStatus, body: { code: kind.code, wire: kind.wire, message }, kind };
}

function kindOfCode(code: ShuffleErrorCode): WireErrorKind {
  switch (code) {
    case 'SHF_ERR_INVALID_ARGUMENT':
      return WireError.BAD_REQUEST;
    case 'SHF_ERR_PARTITION_NOT_FOUND':
      return WireError.PARTITION_NOT_FOUND;
    case 'SHF_ERR_COMMIT_CONFLICT':
      return WireError.COMMIT_CONFLICT;
    case 'SHF_ERR_FENCED':
      return WireError.FENCED;
    case 'SHF_ERR_NOT_REPLICATED':
      return WireError.NOT_REPLICATED;
    case 'SHF_ERR_DATA_CORRUPTED':
      return WireError.MALFORMED_BODY;
    case 'SHF_ERR_UNAUTHORIZED':
      return WireError.UNAUTHORIZED;
    case 'SHF_ERR_FORBIDDEN':
      return WireError.FORBIDDEN;
    case 'SHF_ERR_LIMIT_EXCEEDED':
      return WireError.BODY_TOO_LARGE;
    case 'SHF_ERR_STORAGE_UNAVAILABLE':
      return WireError.STORAGE_UNAVAILABLE;
    case 'SHF_ERR_TIMEOUT':
      return WireError.REQUEST_TIMEOUT;
    case 'SHF_ERR_CLOSED':
      // a part of the server closed under a request in flight: it is shutting down, ask another time
      return WireError.SHUTTING_DOWN;
    default:
      return WireError.INTERNAL;
  }
}

/** HTTP statuses that may succeed when asked again, for answers without a known wire number. */
const RETRYABLE_STATUS: ReadonlySet<number> = new Set([408, 429, 502, 503, 504]);

/**
 * Client side, the one mapping from an error response to a ShuffleError: the body's `wire` number when
 * known (its code and retryability), else its SHF code, else the HTTP status (5xx are
 * STORAGE_UNAVAILABLE, 408 TIMEOUT, other 4xx INVALID_ARGUMENT). Retryable without a known wire number:
 * 502, 503, 504 (a proxy or a server in trouble), 408 and 429 — not 500 or 501, a server's own error. `context` (partition, server)
 * is added to the error; the message names the server's answer.
 */
export function fromWireResponse(httpStatus: number, body: unknown, context: ShuffleErrorContext = {}): ShuffleError {
  const b = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  const known = BY_NUMBER.get(Number(b['wire']));
  const serverMessage = typeof b['message'] === 'string' ? b['message'].slice(0, 2000) : `HTTP ${httpStatus}`;
  let code: ShuffleErrorCode;
  let retryable: boolean;
  if (known !== undefined && known.httpStatus === httpStatus) {
    code = known.code;
    retryable = known.retryable;
  } else if (isShuffleErrorCode(b['code'])) {
    code = b['code'];
    retryable = RETRYABLE_STATUS.has(httpStatus);
  } else if (httpStatus === 408) {
    code = 'SHF_ERR_TIMEOUT';
    retryable = true;
  } else if (httpStatus >= 500 || httpStatus === 429) {
    code = 'SHF_ERR_STORAGE_UNAVAILABLE';
    retryable = RETRYABLE_STATUS.has(httpStatus);
  } else {
    code = 'SHF_ERR_INVALID_ARGUMENT';
    retryable = false;
  }
  return new ShuffleError(code, `shuffle server answered ${httpStatus}: ${serverMessage}`, {
    retryable,
    context: { ...context, httpStatus, ...(known === undefined ? {} : { wire: known.wire }) },
  });
}
