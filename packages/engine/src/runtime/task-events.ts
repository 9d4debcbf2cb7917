import type { SinkOutput } from '../operators/stream-operator.js';
import type { SerializedTaskError } from './task-error-serialization.js';
import type { TaskMetrics } from './task-deployment.js';

/** What a finished task reports. */
export interface TaskResult {
  readonly attemptId: string;
  readonly durationMs: number;
  readonly metrics: TaskMetrics;
  readonly sinks: readonly SinkOutput[];
}

/**
 * Task state changes, from a task executor to the job master (over IPC for workers). The scheduler is
 * driven by these: `finished` may make consumer regions schedulable; `failed` goes to the failover path;
 * `cancelled` confirms a cancellation the job master asked for.
 */
export type TaskEvent =
  | { readonly type: 'running'; readonly attemptId: string }
  /**
   * A restarted attempt (attempt > 0) read its first record (a source: began to run): the moment its
   * failover ends for its key range. `atMs`: the executor host's wall clock (wallClockMs(), a fraction of a millisecond). First attempts do not send it.
   */
  | { readonly type: 'reading'; readonly attemptId: string; readonly atMs: number }
  | { readonly type: 'finished'; readonly attemptId: string; readonly result: TaskResult }
  | { readonly type: 'failed'; readonly attemptId: string; readonly error: SerializedTaskError; readonly metrics?: TaskMetrics }
  | { readonly type: 'cancelled'; readonly attemptId: string; readonly metrics?: TaskMetrics }
  /**
   * A finished attempt's pipelined outputs are gone: the process that held them (a cluster executor's worker
   * process) died after it finished. Its PIPELINED_APPROXIMATE partitions count as released from then on.
   */
  | { readonly type: 'outputs-lost'; readonly attemptId: string }
  /**
   * A channel of this attempt's PIPELINED_APPROXIMATE input partition `partitionId` lost its producer attempt
   * before its end (`channel-unavailable`): it waits for a new one. Where none will come — the producer had
   * finished and its outputs were lost with its process (`outputs-lost`) — the job master fails the attempt
   * over at once (WEFT_ERR_APPROXIMATE_INPUT_LOST) instead of letting it wait out its reconnect timeout.
   */
  | { readonly type: 'input-unavailable'; readonly attemptId: string; readonly partitionId: string }
  /** A channel of partition `partitionId` that was `input-unavailable` reads a new producer attempt (`channel-resumed`). */
  | { readonly type: 'input-resumed'; readonly attemptId: string; readonly partitionId: string };

/** Live counters of the running tasks of an executor. */
export interface TaskProgress {
  readonly attemptId: string;
  readonly metrics: TaskMetrics;
}
