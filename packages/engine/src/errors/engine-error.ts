import { type EngineErrorCode, isEngineErrorCode } from './error-codes.js';

/** Typed context carried by an error: ids, field names and numbers that name what failed. */
export type EngineErrorContext = Readonly<Record<string, string | number | boolean | undefined>>;

export interface EngineErrorOptions {
  readonly cause?: unknown;
  readonly context?: EngineErrorContext;
}

/**
 * The one error class of the engine and the command line. `code` is stable (`WEFT_ERR_*`, see ERRORS.md);
 * `context` names the field, vertex or partition involved; `cause` keeps the underlying error.
 */
export class EngineError extends Error {
  override readonly name = 'EngineError';
  readonly code: EngineErrorCode;
  readonly context: EngineErrorContext;

  constructor(code: EngineErrorCode, message: string, options: EngineErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.context = options.context ?? {};
  }

  /** The field, argument or flag this error is about, when it is about one. */
  get field(): string | undefined {
    const field = this.context['field'];
    return typeof field === 'string' ? field : undefined;
  }
}

/**
 * True when `error` carries an engine error code (and `code`, when given). Duck-typed on purpose: an error
 * rebuilt from another process or another copy of this package still matches.
 */
export function isEngineError(error: unknown, code?: EngineErrorCode): error is EngineError {
  if (typeof error !== 'object' || error === null) return false;
  const actual = (error as { code?: unknown }).code;
  return isEngineErrorCode(actual) && (code === undefined || actual === code);
}

/** `WEFT_ERR_INVALID_ARGUMENT` naming the offending argument. */
export function invalidEngineArgument(field: string, problem: string, context: EngineErrorContext = {}): EngineError {
  return new EngineError('WEFT_ERR_INVALID_ARGUMENT', `invalid ${field}: ${problem}`, { context: { field, ...context } });
}

/** `WEFT_ERR_INVALID_TOPOLOGY` naming the offending field of the topology, e.g. `edges[3].partitionType`. */
export function invalidTopology(field: string, problem: string, cause?: unknown): EngineError {
  return new EngineError('WEFT_ERR_INVALID_TOPOLOGY', `invalid topology: ${field}: ${problem}`, {
    context: { field },
    ...(cause === undefined ? {} : { cause }),
  });
}
