import { invalidArgument } from './shuffle-error.js';

declare const brand: unique symbol;

/** A nominal type: a `string` that only the matching constructor below produces. */
export type Brand<T, B extends string> = T & { readonly [brand]: B };

/** A job. */
export type JobId = Brand<string, 'JobId'>;
/** An intermediate result: what one job edge carries (the edge id). */
export type IntermediateResultId = Brand<string, 'IntermediateResultId'>;
/** One producer subtask's partition of an intermediate result: `"<edgeId>#<producerSubtaskIndex>"`. */
export type ResultPartitionId = Brand<string, 'ResultPartitionId'>;
/** One execution vertex (parallel subtask): `"<vertexId>#<subtaskIndex>"`. */
export type ExecutionVertexId = Brand<string, 'ExecutionVertexId'>;
/** One execution attempt of a subtask: `"<vertexId>#<subtaskIndex>@<attempt>"`. */
export type ExecutionAttemptId = Brand<string, 'ExecutionAttemptId'>;
/** A task executor (a worker process or the in-process executor). */
export type TaskExecutorId = Brand<string, 'TaskExecutorId'>;

/** Longest id accepted, in UTF-16 code units. */
export const MAX_ID_LENGTH = 512;

/**
 * Checks that `value` is safe to use as (part of) a storage key or file name: non-empty, at most
 * MAX_ID_LENGTH long, no `/` or `\`, no `..`, no control characters (C0, DEL, C1) or line separators (U+2028, U+2029). Throws SHF_ERR_INVALID_ARGUMENT
 * naming `field` otherwise. Ids are never turned into paths or keys without passing this check.
 */
export function validateId(field: string, value: unknown): string {
  if (typeof value !== 'string') throw invalidArgument(field, `expected a string, got ${typeof value}`);
  if (value.length === 0) throw invalidArgument(field, 'must not be empty');
  if (value.length > MAX_ID_LENGTH) {
    throw invalidArgument(field, `longer than ${MAX_ID_LENGTH} characters (${value.length})`);
  }
  if (value.includes('/') || value.includes('\\')) {
    throw invalidArgument(field, `must not contain a path separator: ${JSON.stringify(value)}`);
  }
  if (value.includes('..')) throw invalidArgument(field, `must not contain "..": ${JSON.stringify(value)}`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(value)) {
    throw invalidArgument(field, `must not contain control characters: ${JSON.stringify(value)}`);
  }
  return value;
}

/** Checks that `value` is an integer in [min, max]; throws SHF_ERR_INVALID_ARGUMENT naming `field`. */
export function validateInteger(field: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw invalidArgument(field, `expected an integer, got ${JSON.stringify(value)}`);
  }
  if (value < min || value > max) throw invalidArgument(field, `${value} is outside [${min}, ${max}]`);
  return value;
}

export function jobId(value: string): JobId {
  return validateId('jobId', value) as JobId;
}

export function intermediateResultId(value: string): IntermediateResultId {
  return validateId('intermediateResultId', value) as IntermediateResultId;
}

export function resultPartitionId(resultId: string, producerSubtaskIndex: number): ResultPartitionId {
  validateInteger('producerSubtaskIndex', producerSubtaskIndex, 0, 2 ** 31 - 1);
  return validateId('partitionId', `${resultId}#${producerSubtaskIndex}`) as ResultPartitionId;
}

export function executionVertexId(vertexId: string, subtaskIndex: number): ExecutionVertexId {
  validateInteger('subtaskIndex', subtaskIndex, 0, 2 ** 31 - 1);
  return validateId('executionVertexId', `${vertexId}#${subtaskIndex}`) as ExecutionVertexId;
}

export function executionAttemptId(vertexId: ExecutionVertexId, attempt: number): ExecutionAttemptId {
  validateInteger('attempt', attempt, 0, 2 ** 31 - 1);
  return validateId('executionAttemptId', `${vertexId}@${attempt}`) as ExecutionAttemptId;
}

export function taskExecutorId(value: string): TaskExecutorId {
  return validateId('taskExecutorId', value) as TaskExecutorId;
}

/** Checks an optional job master epoch (`RegisterPartitionRequest.epoch`): undefined, or a non-negative safe integer. */
export function validateEpoch(field: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  return validateInteger(field, value, 0, Number.MAX_SAFE_INTEGER);
}
