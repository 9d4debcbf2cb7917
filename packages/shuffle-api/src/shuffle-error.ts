import { RETRYABLE_CODES, type ShuffleErrorCode, isShuffleErrorCode } from './error-codes.js';

/** Typed context carried by an error: ids and numbers that name what failed. */
export type ShuffleErrorContext = Readonly<Record<string, string | number | boolean | undefined>>;

export interface ShuffleErrorOptions {
  readonly cause?: unknown;
  /** @defaultValue true for STORAGE_UNAVAILABLE and TIMEOUT, false otherwise */
  readonly retryable?: boolean;
  readonly context?: ShuffleErrorContext;
}

/**
 * The one error class of the shuffle. `code` is stable (`SHF_ERR_*`, see ERRORS.md); `context` names the
 * partition, field or setting involved; `cause` keeps the underlying error.
 */
export class ShuffleError extends Error {
  override readonly name = 'ShuffleError';
  readonly code: ShuffleErrorCode;
  readonly retryable: boolean;
  readonly context: ShuffleErrorContext;

  constructor(code: ShuffleErrorCode, message: string, options: ShuffleErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = options.retryable ?? RETRYABLE_CODES.has(code);
    this.context = options.context ?? {};
  }

  /** The partition this error is about, when it is about one. */
  get partitionId(): string | undefined {
    const id = this.context['partitionId'];
    return typeof id === 'string' ? id : undefined;
  }

  toJSON(): SerializedShuffleError {
    return serializeError(this) as SerializedShuffleError;
  }
}

/** An error as it crosses a process boundary (worker IPC, HTTP). */
export interface SerializedShuffleError {
  readonly name: string;
  readonly message: string;
  readonly code?: string;
  /** A Node.js system error's failed system call (`open`, `mkdir`, `connect`…), beside its `code` (ENOTDIR…). */
  readonly syscall?: string;
  readonly retryable?: boolean;
  readonly context?: Record<string, string | number | boolean | undefined>;
  readonly stack?: string;
  readonly cause?: SerializedShuffleError;
}

/**
 * True when `error` carries a shuffle error code (and `code`, when given). Duck-typed on purpose: an error
 * rebuilt from another process or another copy of this package still matches.
 */
export function isShuffleError(error: unknown, code?: ShuffleErrorCode): error is ShuffleError {
  if (typeof error !== 'object' || error === null) return false;
  const actual = (error as { code?: unknown }).code;
  return isShuffleErrorCode(actual) && (code === undefined || actual === code);
}

/** Finds the first error in the `cause` chain with the given code. */
export function findShuffleError(error: unknown, code?: ShuffleErrorCode): ShuffleError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 32 && current !== undefined && current !== null; depth++) {
    if (isShuffleError(current, code)) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Serializes any thrown value, with its cause chain, to plain JSON. */
export function serializeError(error: unknown, depth = 0): SerializedShuffleError {
  if (!(error instanceof Error) && (typeof error !== 'object' || error === null)) {
    return { name: 'Error', message: String(error) };
  }
  const e = error as Error & { code?: unknown; syscall?: unknown; retryable?: unknown; context?: unknown };
  const out: {
    name: string;
    message: string;
    code?: string;
    syscall?: string;
    retryable?: boolean;
    context?: Record<string, string | number | boolean | undefined>;
    stack?: string;
    cause?: SerializedShuffleError;
  } = { name: typeof e.name === 'string' ? e.name : 'Error', message: String(e.message) };
  if (typeof e.code === 'string') out.code = e.code;
  if (typeof e.syscall === 'string') out.syscall = e.syscall;
  if (typeof e.retryable === 'boolean') out.retryable = e.retryable;
  if (typeof e.context === 'object' && e.context !== null) {
    out.context = { ...(e.context as Record<string, string | number | boolean | undefined>) };
  }
  if (typeof e.stack === 'string') out.stack = e.stack;
  if (e.cause !== undefined && depth < 16) out.cause = serializeError(e.cause, depth + 1);
  return out;
}

/**
 * Rebuilds an error serialized by `serializeError`: a `ShuffleError` when it carries a known code, a plain
 * `Error` otherwise (with a system error's `code` and `syscall`); name, stack and the cause chain are kept.
 */
export function deserializeError(value: SerializedShuffleError): Error {
  const cause = value.cause === undefined ? undefined : deserializeError(value.cause);
  let error: Error;
  if (isShuffleErrorCode(value.code)) {
    error = new ShuffleError(value.code, value.message, {
      cause,
      ...(value.retryable === undefined ? {} : { retryable: value.retryable }),
      ...(value.context === undefined ? {} : { context: value.context }),
    });
  } else {
    error = new Error(value.message, cause === undefined ? undefined : { cause });
    if (value.name !== 'Error') Object.defineProperty(error, 'name', { value: value.name });
    if (value.code !== undefined) Object.defineProperty(error, 'code', { value: value.code, enumerable: true });
    if (value.syscall !== undefined) Object.defineProperty(error, 'syscall', { value: value.syscall, enumerable: true });
  }
  if (value.stack !== undefined) error.stack = value.stack;
  return error;
}

/** `SHF_ERR_INVALID_ARGUMENT` naming the offending field. */
export function invalidArgument(field: string, problem: string, context: ShuffleErrorContext = {}): ShuffleError {
  return new ShuffleError('SHF_ERR_INVALID_ARGUMENT', `invalid ${field}: ${problem}`, {
    context: { field, ...context },
  });
}

/** `SHF_ERR_INVALID_CONFIG` naming the setting to change. */
export function invalidConfig(setting: string, problem: string, cause?: unknown): ShuffleError {
  return new ShuffleError('SHF_ERR_INVALID_CONFIG', `invalid setting ${setting}: ${problem}`, {
    context: { setting },
    ...(cause === undefined ? {} : { cause }),
  });
}

/** `SHF_ERR_PARTITION_NOT_FOUND` for one partition. */
export function partitionNotFound(partitionId: string, reason: string, cause?: unknown): ShuffleError {
  return new ShuffleError('SHF_ERR_PARTITION_NOT_FOUND', `partition ${partitionId} not found: ${reason}`, {
    context: { partitionId },
    ...(cause === undefined ? {} : { cause }),
  });
}

/** `SHF_ERR_CLOSED` for the named object. */
export function closedError(what: string): ShuffleError {
  return new ShuffleError('SHF_ERR_CLOSED', `${what} is closed`);
}

/** What a SHF_ERR_FENCED error names: the job, the refused epoch, the newest one seen, and the partition if any. */
export interface FencedErrorContext {
  readonly jobId: string;
  readonly epoch: number;
  readonly newestEpoch: number;
  readonly partitionId?: string;
}

/** `SHF_ERR_FENCED`: a job master run older than the newest one seen for the job tried to change it. */
export function fencedError(what: string, context: FencedErrorContext): ShuffleError {
  return new ShuffleError(
    'SHF_ERR_FENCED',
    `${what} of job ${context.jobId} refused: it carries job master epoch ${context.epoch}, but epoch ${context.newestEpoch} already took over the job`,
    { retryable: false, context: { ...context } },
  );
}
