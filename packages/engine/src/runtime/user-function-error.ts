import { EngineError } from '../errors/engine-error.js';

/** Who is running: named in every error a task raises. */
export interface TaskIdentity {
  readonly operatorName: string;
  readonly operatorKind: string;
  readonly vertexId: string;
  readonly subtask: number;
  readonly parallelism: number;
  readonly attempt: number;
  readonly attemptId: string;
}

/**
 * `WEFT_ERR_USER_FUNCTION_FAILED` for an error thrown by a user function of `operator`: names the
 * operator, the subtask and the attempt; `cause` is the original error (stack kept).
 */
export function userFunctionError(identity: TaskIdentity, error: unknown, what = 'function'): EngineError {
  const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return new EngineError(
    'WEFT_ERR_USER_FUNCTION_FAILED',
    `operator ${JSON.stringify(identity.operatorName)} (${identity.operatorKind}) ${what} threw in subtask ${identity.subtask} of ${identity.parallelism} (attempt ${identity.attempt}): ${detail}`,
    {
      cause: error,
      context: {
        operator: identity.operatorName,
        operatorKind: identity.operatorKind,
        vertexId: identity.vertexId,
        subtask: identity.subtask,
        attempt: identity.attempt,
        executionAttemptId: identity.attemptId,
      },
    },
  );
}
