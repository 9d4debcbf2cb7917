import type { FailoverStrategyName } from '../failover/failover-strategy.js';

/**
 * One failover of a job: a task failed and the restart strategy allowed a restart, so the failover
 * strategy's tasks were reset (cancelled where they ran, their partitions released) and rescheduled as
 * new attempts. `tasksToRestart` is Flink's "tasks to restart" — exactly what
 * `weft plan <topology> --fail <failedTask> [--lost <partition>]… --strategy <strategy>` prints for the
 * job's topology. Or a **global** failover (Flink's `failGlobal`): the job master itself failed — its
 * checkpoints failed more times in a row than tolerated — and the restart strategy allowed a restart, so
 * every task was reset (`strategy` 'all'), each restoring from the latest completed checkpoint; it names
 * no task (`global: true`, no `failedTask` or `attemptId`). Plain JSON.
 */
export interface FailoverRecord {
  /** Milliseconds since the job started. */
  readonly atMs: number;
  /** True for a global failover (the job master's own failure); absent for a task's. */
  readonly global?: true;
  /** The failed execution vertex, `"<vertexId>#<subtask>"`. Absent for a global failover. */
  readonly failedTask?: string;
  /** Its attempt that failed, `"<vertexId>#<subtask>@<attempt>"`. Absent for a global failover. */
  readonly attemptId?: string;
  /** Why: the failure's code (`WEFT_ERR_*` / `SHF_ERR_*`, when it has one) and message. */
  readonly error: { readonly code?: string; readonly message: string };
  /** Partitions the failure names as unreadable (SHF_ERR_PARTITION_NOT_FOUND / SHF_ERR_DATA_CORRUPTED). */
  readonly lostPartitions: readonly string[];
  readonly strategy: FailoverStrategyName;
  /** The execution vertices reset for this failure, in topology order. */
  readonly tasksToRestart: readonly string[];
  /**
   * Those of `tasksToRestart` whose reset attempt had already been deployed (it ran, runs, or finished):
   * their work is done again. The others had not started yet, so resetting them costs nothing.
   */
  readonly tasksRunAgain: readonly string[];
  /** Tasks of the job: what restarting all of them resets. */
  readonly tasksTotal: number;
  /** Tasks whose current attempt had been deployed when this failure happened: what restarting all of them would run again. */
  readonly tasksDeployed: number;
  /** The restart strategy's backoff before the reset tasks were rescheduled. */
  readonly backoffMs: number;
}

/** A task executor the job lost (a worker process died, was killed, or stopped answering). */
export interface ExecutorLossRecord {
  readonly atMs: number;
  readonly taskExecutorId: string;
  readonly reason: string;
  /** Whether a new executor was started in its place. */
  readonly replaced: boolean;
}
