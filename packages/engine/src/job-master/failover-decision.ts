import { findShuffleError } from '@weft/shuffle-api';
import { EngineError, isEngineError } from '../errors/engine-error.js';
import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { FailoverStrategy } from '../failover/failover-strategy.js';
import type { RestartBackoffTimeStrategy } from '../restart/restart-backoff-time-strategy.js';
import type { FailoverRecord } from './failover-record.js';
import { describeFailure, lostPartitionsOf } from './failure-cause.js';
import type { PartitionStates } from './partition-states.js';
import type { TaskAttempts } from './task-attempts.js';

export interface FailoverDecisionRequest {
  /** The failed execution vertex (its current attempt failed). */
  readonly failed: number;
  readonly error: Error;
  /** The job's name, for the job's error. */
  readonly jobName: string;
  readonly topology: ExecutionTopology;
  readonly restart: RestartBackoffTimeStrategy;
  readonly failover: FailoverStrategy;
  readonly partitions: PartitionStates;
  readonly attempts: TaskAttempts;
  /** Milliseconds since the job started. */
  readonly elapsedMs: () => number;
  /**
   * An adaptive job's skipped subtasks (reserved beyond a decided parallelism): restarted with their
   * regions (they finish again at once) but not reported — the record names real tasks only, as the
   * decided topology `weft plan` reads would. @defaultValue none is skipped
   */
  readonly isSkipped?: ((v: number) => boolean) | undefined;
}

/** Restart `record.tasksToRestart` (as `vertices`), or fail the job with `error`. */
export type FailoverDecision =
  | { readonly restart: true; readonly record: FailoverRecord; readonly vertices: Int32Array }
  | { readonly restart: false; readonly error: EngineError };

/**
 * What a task failure costs, as Flink decides it: an invalid job, or a failure no restart can cure (a
 * shuffle server refused the job's token: UNRECOVERABLE_SHUFFLE_CODES), fails at once; otherwise the restart
 * strategy is told of the failure and decides whether a restart may follow ("recovery is suppressed by
 * <strategy>" when not), and the failover strategy which tasks restart — the failed task's region and,
 * with the partitions the failure names unreadable or that were released, their producers. The failover
 * is described by the record the job's result reports.
 */
export function decideFailover(request: FailoverDecisionRequest): FailoverDecision {
  const { failed, error, topology, restart, failover, partitions, attempts } = request;
  if (isEngineError(error, 'WEFT_ERR_INVALID_JOB')) return { restart: false, error: jobFailedError(request, error) };
  const refusal = unrecoverableCause(error);
  if (refusal !== undefined) return { restart: false, error: jobFailedError(request, error, `not recoverable by a restart (${refusal}): `) };
  restart.notifyFailure(error);
  if (!restart.canRestart()) return { restart: false, error: jobFailedError(request, error, `recovery is suppressed by ${restart.toString()}: `) };
  const failedTask = topology.executionVertexId(failed);
  const named = lostPartitionsOf(error, topology);
  let vertices: Int32Array;
  try {
    vertices = failover.verticesToRestart({ failedVertex: failedTask, lostPartitions: named });
  } catch (failoverError) {
    return { restart: false, error: jobFailedError(request, failoverError as Error) };
  }
  // Released partitions the walk met count as lost too: with them, `weft plan --lost` predicts this failover.
  const skipped = request.isSkipped ?? (() => false);
  const producerSkipped = (partitionId: string): boolean => {
    const p = topology.indexOfResultPartition(partitionId);
    return p >= 0 && skipped(topology.producerOfPartition(p));
  };
  const lostPartitions = [...named, ...partitions.releasedInputsOf(topology, vertices).filter((p) => !named.includes(p) && !producerSkipped(p))];
  const { atMs, ...tasks } = restartedTasks(request, vertices);
  const record: FailoverRecord = { atMs, failedTask, attemptId: attempts.attemptIdOf(failed), error: describeFailure(error), lostPartitions, strategy: failover.name, ...tasks };
  return { restart: true, record, vertices };
}

/**
 * Shuffle refusals no restart can cure (Flink's non-recoverable failures): the job's token refused by a
 * shuffle server — a secret that differs between the job master and the server, or a token of another job.
 * Every restarted attempt would be refused alike.
 */
const UNRECOVERABLE_SHUFFLE_CODES = ['SHF_ERR_UNAUTHORIZED', 'SHF_ERR_FORBIDDEN'] as const;

/** The code of the first non-recoverable refusal in `error`'s cause chain, if any. */
function unrecoverableCause(error: Error): string | undefined {
  for (const code of UNRECOVERABLE_SHUFFLE_CODES) if (findShuffleError(error, code) !== undefined) return code;
  return undefined;
}

/** What a global failover is decided from: a task failure's request without the task. */
export type GlobalFailoverDecisionRequest = Omit<FailoverDecisionRequest, 'failed' | 'failover'>;

/**
 * What the job master's own failure costs (Flink's `failGlobal`: its checkpoints failed more times in a row
 * than tolerated): the restart strategy is told of it and decides whether a restart may follow, as for a
 * task's; then every task restarts (Flink's global failover, whatever the failover strategy), each from the
 * latest completed checkpoint. The record names no task (`global: true`) and the strategy `all`: what
 * `weft plan --strategy all` prints for any task of the job.
 */
export function decideGlobalFailover(request: GlobalFailoverDecisionRequest): FailoverDecision {
  const { error, topology, restart, jobName } = request;
  restart.notifyFailure(error);
  if (!restart.canRestart()) {
    return {
      restart: false,
      error: new EngineError('WEFT_ERR_JOB_FAILED', `job ${JSON.stringify(jobName)} failed: recovery is suppressed by ${restart.toString()}: ${error.message}`, { cause: error, context: { restartStrategy: restart.toString() } }),
    };
  }
  const vertices = new Int32Array(topology.executionVertexCount);
  for (let v = 0; v < vertices.length; v++) vertices[v] = v;
  const { atMs, ...tasks } = restartedTasks(request, vertices);
  const record: FailoverRecord = { atMs, global: true, error: describeFailure(error), lostPartitions: [], strategy: 'all', ...tasks };
  return { restart: true, record, vertices };
}

/**
 * What a failover record says of the tasks it restarts, `vertices`, and when: the real ones (an adaptive
 * job's skipped subtasks are left out, and out of the total), those of them that had been deployed, the
 * restart strategy's backoff.
 */
function restartedTasks(request: GlobalFailoverDecisionRequest, vertices: Int32Array): Pick<FailoverRecord, 'atMs' | 'tasksToRestart' | 'tasksRunAgain' | 'tasksTotal' | 'tasksDeployed' | 'backoffMs'> {
  const { topology, attempts, restart } = request;
  const skipped = request.isSkipped ?? (() => false);
  const real = Array.from(vertices).filter((u) => !skipped(u));
  let skippedCount = 0;
  if (request.isSkipped !== undefined) for (let u = 0; u < topology.executionVertexCount; u++) if (skipped(u)) skippedCount++;
  return {
    atMs: request.elapsedMs(),
    tasksToRestart: real.map((u) => topology.executionVertexId(u)),
    tasksRunAgain: real.filter((u) => attempts.wasDeployed(u)).map((u) => topology.executionVertexId(u)),
    tasksTotal: topology.executionVertexCount - skippedCount,
    tasksDeployed: attempts.deployedCount(),
    backoffMs: restart.getBackoffTimeMs(),
  };
}

/** `WEFT_ERR_JOB_FAILED` for the failure of the failed task's current attempt, `why` prefixed to its message. */
function jobFailedError(request: FailoverDecisionRequest, cause: Error, why = ''): EngineError {
  const attemptId = request.attempts.attemptIdOf(request.failed);
  return new EngineError('WEFT_ERR_JOB_FAILED', `job ${JSON.stringify(request.jobName)} failed: ${why}task ${attemptId} failed: ${cause.message}`, {
    cause,
    context: { executionAttemptId: attemptId, ...(why === '' ? {} : { restartStrategy: request.restart.toString() }) },
  });
}
