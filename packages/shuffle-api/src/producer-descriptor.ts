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
  /**
   * Where that task executor's environment of this shuffle serves partitions to other executors (Flink's
   * ProducerDescriptor address and data port): `ShuffleEnvironment.location` as the executor reported it.
   * Set by an engine that places a producer on one executor and its consumers on others; a master that
   * serves partitions from the producer's executor reads it, any other ignores it. @defaultValue absent
   */
  readonly location?: ShuffleLocation;
}

/** A host and port where a task executor's shuffle environment serves the partitions it produces. Plain JSON. */
export interface ShuffleLocation {
  readonly host: string;
  readonly port: number;
}

/** Checks a ShuffleLocation; SHF_ERR_INVALID_ARGUMENT naming `<field>.host` / `<field>.port`. */
export function validateShuffleLocation(value: unknown, field = 'location'): ShuffleLocation {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidArgument(field, 'expected {host, port}');
  const v = value as Record<string, unknown>;
  if (typeof v['host'] !== 'string' || v['host'] === '') throw invalidArgument(`${field}.host`, `expected a host, got ${JSON.stringify(v['host'])}`);
  validateInteger(`${field}.port`, v['port'], 1, 65_535);
  return value as ShuffleLocation;
}

export function validateProducerDescriptor(value: unknown, field = 'producer'): ProducerDescriptor {
  if (typeof value !== 'object' || value === null) throw invalidArgument(field, 'expected an object');
  const v = value as Record<string, unknown>;
  validateId(`${field}.producerId`, v['producerId']);
  validateInteger(`${field}.attempt`, v['attempt'], 0, 2 ** 31 - 1);
  validateId(`${field}.taskExecutorId`, v['taskExecutorId']);
  if (v['location'] !== undefined) validateShuffleLocation(v['location'], `${field}.location`);
  return value as ProducerDescriptor;
}
