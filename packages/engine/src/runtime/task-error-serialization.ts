import { type SerializedShuffleError, deserializeError, serializeError } from '@weft/shuffle-api';
import { EngineError, type EngineErrorContext } from '../errors/engine-error.js';
import { isEngineErrorCode } from '../errors/error-codes.js';

/** An error as plain data (crosses the worker IPC channel): code, context, stack and cause chain kept. */
export type SerializedTaskError = SerializedShuffleError;

export function serializeTaskError(error: unknown): SerializedTaskError {
  return serializeError(error);
}

/**
 * Rebuilds a serialized error: an `EngineError` (with its context) for `WEFT_ERR_*` codes, a
 * `ShuffleError` for `SHF_ERR_*` codes, otherwise an `Error` with the original name, code and stack.
 */
export function deserializeTaskError(value: SerializedTaskError): Error {
  const cause = value.cause === undefined ? undefined : deserializeTaskError(value.cause);
  if (isEngineErrorCode(value.code)) {
    const error = new EngineError(value.code, value.message, {
      ...(cause === undefined ? {} : { cause }),
      ...(value.context === undefined ? {} : { context: value.context as EngineErrorContext }),
    });
    if (value.stack !== undefined) error.stack = value.stack;
    return error;
  }
  // The rest as shuffle-api rebuilds them; the cause chain is rebuilt here, so engine codes survive in it.
  const error = deserializeError({ ...value, cause: undefined });
  if (cause !== undefined) Object.defineProperty(error, 'cause', { value: cause, configurable: true, writable: true });
  return error;
}
