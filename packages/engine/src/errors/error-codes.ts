/**
 * The stable error codes of the engine and the `weft` command line. Callers branch on `error.code`, never
 * on `instanceof` (two copies of this package may be loaded in one process).
 *
 * Each code is documented in `ERRORS.md` at the package root; a test fails when one used anywhere in
 * `packages/engine/src` or `packages/cli/src` is not. Codes are never renamed or reused for another meaning.
 */
export const EngineErrorCode = {
  /** An argument of an engine function is malformed or out of range. The message names the argument. */
  INVALID_ARGUMENT: 'WEFT_ERR_INVALID_ARGUMENT',
  /** A job topology was refused: the message names the offending field, e.g. `edges[3].partitionType`. */
  INVALID_TOPOLOGY: 'WEFT_ERR_INVALID_TOPOLOGY',
  /** An execution vertex id does not name a subtask of the topology. Carries `executionVertexId`. */
  UNKNOWN_EXECUTION_VERTEX: 'WEFT_ERR_UNKNOWN_EXECUTION_VERTEX',
  /** A result partition id does not name a partition of the topology. Carries `partitionId`. */
  UNKNOWN_PARTITION: 'WEFT_ERR_UNKNOWN_PARTITION',
  /** The chosen failover strategy cannot handle this job (e.g. `individual` on tasks that exchange data). */
  FAILOVER_STRATEGY_NOT_APPLICABLE: 'WEFT_ERR_FAILOVER_STRATEGY_NOT_APPLICABLE',
  /** A method was called in a state that does not allow it (e.g. a backoff time before any failure). */
  ILLEGAL_STATE: 'WEFT_ERR_ILLEGAL_STATE',
  /** The command line was malformed: unknown command, unknown flag, missing or bad value. Exit code 2. */
  USAGE: 'WEFT_ERR_USAGE',
  /** An input file could not be read or is not valid JSON. Carries `path`. Exit code 2. */
  INPUT_UNREADABLE: 'WEFT_ERR_INPUT_UNREADABLE',
  /** A job (module or job graph) was refused: the message names the operator and the field. Exit code 2. */
  INVALID_JOB: 'WEFT_ERR_INVALID_JOB',
  /** A user function (map, filter, key selector, …) threw. Carries `operator`, `subtask`, `attempt`; `cause` is the error. */
  USER_FUNCTION_FAILED: 'WEFT_ERR_USER_FUNCTION_FAILED',
  /** A job failed: a task failed and no restart was possible. `cause` is the task's error. Exit code 1. */
  JOB_FAILED: 'WEFT_ERR_JOB_FAILED',
  /** A record could not be serialized or deserialized by the record serializer. */
  SERIALIZATION: 'WEFT_ERR_SERIALIZATION',
  /** A task executor (worker process) died, stopped answering heartbeats, or could not start. Carries `taskExecutorId`. */
  TASK_EXECUTOR_LOST: 'WEFT_ERR_TASK_EXECUTOR_LOST',
  /** A task was cancelled (its job failed or was aborted, or its region restarts). */
  TASK_CANCELLED: 'WEFT_ERR_TASK_CANCELLED',
  /** A sink could not write or publish its output. Carries `path`. */
  SINK_FAILED: 'WEFT_ERR_SINK_FAILED',
  /** A fault planted on purpose (`weft run --inject-faults`, a fault-injection test) fired in a task. */
  INJECTED_FAULT: 'WEFT_ERR_INJECTED_FAULT',
  /**
   * A job event log append by an epoch that is no longer the newest for its job: nothing was written; also
   * the error of a run whose job master learned it was fenced (it changed nothing since). Carries `jobId`,
   * `epoch`, `newestEpoch`.
   */
  FENCED: 'WEFT_ERR_FENCED',
  /**
   * The job event log failed: the job's event listener threw or rejected on an event (carries `event`; the job
   * fails, never runs on unrecorded), an append failed past its retries, an event of a newer format version,
   * or a corrupt log (carries `jobId`).
   */
  EVENT_LOG: 'WEFT_ERR_EVENT_LOG',
  /** `--job-id` names a run that cannot be resumed: it finished, or another job module or other job arguments were given. Carries `jobId`, `field`. */
  RESUME_REFUSED: 'WEFT_ERR_RESUME_REFUSED',
  /**
   * A cluster task executor refused a deployment (`weft task-executor`): unsigned or forged (not signed
   * with the shared secret), another weft version, a code bundle whose hash does not match, or no free slot.
   * Nothing of it ran. Carries `taskExecutorId`, `reason`.
   */
  DEPLOYMENT_REFUSED: 'WEFT_ERR_DEPLOYMENT_REFUSED',
  /** `weft run --cluster`: no compatible task executor registered in the cluster's Redis within the startup timeout. Carries `cluster` (the redacted URL). Exit code 1. */
  NO_TASK_EXECUTOR: 'WEFT_ERR_NO_TASK_EXECUTOR',
  /** One record (or one key's accumulator) is larger, serialized, than the task memory budget: no spill can hold it. Carries `operator`, `recordBytes`, `budgetBytes`. */
  RECORD_TOO_LARGE: 'WEFT_ERR_RECORD_TOO_LARGE',
  /** An operator could not write or read its spill files (a full disk: `ENOSPC`). Carries `operator`, `path`, `errno` (the system code); `cause` is the I/O error. */
  SPILL_FAILED: 'WEFT_ERR_SPILL_FAILED',
  /**
   * A state snapshot cannot be restored: not a snapshot, a newer format version, corrupted (checksum), taken
   * with another max parallelism, or snapshots that leave key groups uncovered or cover one twice. Nothing
   * was restored. Carries `snapshot` or the key groups concerned; a refused restore from a checkpoint
   * (`--from-checkpoint`: missing, incomplete, corrupted, another max parallelism) carries `checkpointId` and
   * `jobId`, before anything runs (exit code 2).
   */
  STATE_RESTORE: 'WEFT_ERR_STATE_RESTORE',
  /** More consecutive checkpoint failures (expired, a task's snapshot failed, the store failed) than tolerated: the job master fails over globally, or the job fails where the restart strategy allows no restart. Carries `checkpointId`, `reason`, `failures`. */
  CHECKPOINT_FAILED: 'WEFT_ERR_CHECKPOINT_FAILED',
  /**
   * Approximate recovery (`ALL_EDGES_PIPELINED_APPROXIMATE`, `weft run --approximate-recovery`) was asked
   * together with something it cannot honour: exactly-once checkpoints or an exactly-once sink (records are
   * lost on a failure), a provider's executors (a cluster's), or several executors that do not serve each
   * other's pipelined partitions (workers over the in-memory pipelined shuffle). Carries `option` and
   * `conflictsWith`. Exit code 2.
   */
  APPROXIMATE_REFUSED: 'WEFT_ERR_APPROXIMATE_REFUSED',
  /**
   * A restarted task of an approximate job did not reconnect to one of its approximate inputs (its producer's
   * partition was not there) within `approximateReconnectTimeoutMs`: the task fails through the ordinary
   * failover path. Carries `executionVertexId`, `partitionId`, `timeoutMs`.
   */
  APPROXIMATE_RECONNECT_TIMEOUT: 'WEFT_ERR_APPROXIMATE_RECONNECT_TIMEOUT',
  /**
   * A running task of an approximate job lost an input partition whose producer had finished and whose
   * outputs were lost with its process (a worker killed): no new attempt of that producer would come, so the
   * job master fails the task over at once — the failover restarts that producer with it, from the latest
   * checkpoint — instead of letting it wait out its reconnect timeout. Carries `executionVertexId`, `partitionId`.
   */
  APPROXIMATE_INPUT_LOST: 'WEFT_ERR_APPROXIMATE_INPUT_LOST',
  /** An external stream source (`ctx.readRedisStream`) cannot reach or read its stream, or no connector serves its URL. Carries `operator`, `source` (the redacted URL), `stream`. */
  SOURCE_UNAVAILABLE: 'WEFT_ERR_SOURCE_UNAVAILABLE',
} as const;

export type EngineErrorCode = (typeof EngineErrorCode)[keyof typeof EngineErrorCode];

const ALL_CODES: ReadonlySet<string> = new Set(Object.values(EngineErrorCode));

/** True when `value` is one of the documented engine error codes. */
export function isEngineErrorCode(value: unknown): value is EngineErrorCode {
  return typeof value === 'string' && ALL_CODES.has(value);
}
