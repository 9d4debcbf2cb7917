import { EngineError } from '../errors/engine-error.js';

/** `WEFT_ERR_SPILL_FAILED`: `operator` could not write or read `path` (a full disk: `ENOSPC`). */
export function spillFailed(operator: string, path: string, cause: unknown): EngineError {
  const errno = (cause as NodeJS.ErrnoException | undefined)?.code;
  return new EngineError('WEFT_ERR_SPILL_FAILED', `operator ${JSON.stringify(operator)} could not spill to ${path}: ${(cause as Error | undefined)?.message ?? String(cause)}`, {
    cause,
    context: { operator, path, ...(errno === undefined ? {} : { errno }) },
  });
}
