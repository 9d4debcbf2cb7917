import { type ExecutionAttemptId, type TaskExecutorId, validateId, validateInteger } from './ids.js';
import { invalidArgument } from './shuffle-error.js';

/** The producer of a partition: which attempt, and where it runs (Flink's ProducerDescriptor). Plain JSON. */
export interface ProducerDescriptor {
  /** `"<vertexId>#<subtaskIndex>@<attempt>"`. */
  readonly producerId: ExecutionAttemptId;
  /** The attempt number of the producing subtask (0 for the first execution). */
  readonly attempt: number;
  /** The task executor the producer runs on. */
  readonly taskExecutorId: TaskExecutorId;
}

export function validateProducerDescriptor(value: unknown, field = 'producer'): ProducerDescriptor {
  if (typeof value !== 'object' || value === null) throw invalidArgument(field, 'expected an object');
  const v = value as Record<string, unknown>;
  validateId(`${field}.producerId`, v['producerId']);
  validateInteger(`${field}.attempt`, v['attempt'], 0, 2 ** 31 - 1);
  validateId(`${field}.taskExecutorId`, v['taskExecutorId']);
  return value as ProducerDescriptor;
}
