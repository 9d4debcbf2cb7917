import { invalidEngineArgument } from '../errors/engine-error.js';
import type { CheckpointStore, TaskStateHandle } from './checkpoint-store.js';

/**
 * Why a pending checkpoint did not complete. Counted toward `tolerableFailures` (as Flink's
 * CheckpointFailureManager counts them): `EXPIRED` (not acknowledged within the timeout), `TASK_FAILURE` (a task
 * could not take or write its snapshot), `STORE_FAILURE` (recording it failed). Not counted: `SUBSUMED` (a
 * newer checkpoint completed first), `DECLINED` (a task declined it for a reason of its input: a
 * cancellation marker, an end of partition), `TRIGGER_FAILURE` (the sources could not be told, or a task
 * is restarting: Flink's NOT_ALL_REQUIRED_TASKS_RUNNING), `FAILOVER` (a failover restarts tasks it waits for:
 * Flink's JOB_FAILOVER_REGION), `COORDINATOR_STOPPED`.
 */
export type CheckpointFailureReason = 'EXPIRED' | 'TASK_FAILURE' | 'STORE_FAILURE' | 'SUBSUMED' | 'DECLINED' | 'TRIGGER_FAILURE' | 'FAILOVER' | 'COORDINATOR_STOPPED';

export const COUNTED_FAILURES: ReadonlySet<CheckpointFailureReason> = new Set(['EXPIRED', 'TASK_FAILURE', 'STORE_FAILURE']);

/** Timers, injectable for tests. */
export interface CheckpointTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface CheckpointCoordinatorOptions {
  /** The tasks that must acknowledge every checkpoint (execution vertex ids). */
  readonly tasks: readonly string[];
  /** Milliseconds between periodic checkpoints (`--checkpoint-interval`); > 0. */
  readonly intervalMs: number;
  /** A checkpoint not completed within this is aborted (EXPIRED). @defaultValue 600000 (Flink's 10 min) */
  readonly timeoutMs?: number;
  /** Completed checkpoints kept; older ones are removed and their state discarded. @defaultValue 1 (Flink's state.checkpoints.num-retained) */
  readonly retained?: number;
  /** Checkpoints pending at once; a periodic trigger beyond it is skipped. @defaultValue 1 */
  readonly maxConcurrent?: number;
  /** The least time from one checkpoint's completion to the next trigger. @defaultValue 0 */
  readonly minPauseMs?: number;
  /** Consecutive counted failures tolerated; one more fails the job master (`onFailure`). @defaultValue 0 (Flink's) */
  readonly tolerableFailures?: number;
  readonly store: CheckpointStore;
  /** Tells the sources to inject the barrier of `checkpointId`. */
  readonly triggerSources: (checkpointId: number, triggeredAtMs: number) => void | Promise<void>;
  /** The checkpoint is durable: tasks may commit what they pre-committed for it (two-phase-commit sinks). */
  readonly notifyComplete?: (checkpointId: number) => void;
  readonly notifyAborted?: (checkpointId: number, reason: CheckpointFailureReason) => void;
  /** Removes a task's snapshot data (an aborted checkpoint's, or one no longer retained). */
  readonly discardState?: (handle: TaskStateHandle) => Promise<void>;
  /**
   * More consecutive counted failures than tolerated (WEFT_ERR_CHECKPOINT_FAILED): the job master fails over
   * globally, or the job fails. The count starts again from 0; the coordinator keeps triggering.
   */
  readonly onFailure: (error: Error) => void;
  /** Epoch milliseconds. @defaultValue Date.now */
  readonly clock?: () => number;
  readonly timers?: CheckpointTimers;
}

export interface ResolvedCheckpointCoordinatorOptions extends Required<Omit<CheckpointCoordinatorOptions, 'notifyComplete' | 'notifyAborted' | 'discardState'>> {
  readonly notifyComplete: (checkpointId: number) => void;
  readonly notifyAborted: (checkpointId: number, reason: CheckpointFailureReason) => void;
  readonly discardState: (handle: TaskStateHandle) => Promise<void>;
}

const KEYS = new Set(['tasks', 'intervalMs', 'timeoutMs', 'retained', 'maxConcurrent', 'minPauseMs', 'tolerableFailures', 'store', 'triggerSources', 'notifyComplete', 'notifyAborted', 'discardState', 'onFailure', 'clock', 'timers']);

function integer(field: string, value: unknown, min: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) throw invalidEngineArgument(field, `an integer >= ${min}, got ${String(value)}`);
  return value;
}

/** Checks the options once (WEFT_ERR_INVALID_ARGUMENT naming the option; unknown keys refused) and fills in Flink's defaults. */
export function resolveCheckpointCoordinatorOptions(options: CheckpointCoordinatorOptions): ResolvedCheckpointCoordinatorOptions {
  for (const key of Object.keys(options)) if (!KEYS.has(key)) throw invalidEngineArgument(`options.${key}`, 'unknown option');
  const tasks = options.tasks;
  if (!Array.isArray(tasks) || tasks.length === 0 || tasks.some((t) => typeof t !== 'string' || t === '')) throw invalidEngineArgument('options.tasks', 'a non-empty list of task ids');
  if (new Set(tasks).size !== tasks.length) throw invalidEngineArgument('options.tasks', 'a task is listed twice');
  for (const fn of ['triggerSources', 'onFailure'] as const) if (typeof options[fn] !== 'function') throw invalidEngineArgument(`options.${fn}`, 'expected a function');
  if (typeof options.store?.nextCheckpointId !== 'function') throw invalidEngineArgument('options.store', 'expected a CheckpointStore');
  return {
    tasks: [...tasks],
    intervalMs: integer('options.intervalMs', options.intervalMs, 1),
    timeoutMs: integer('options.timeoutMs', options.timeoutMs ?? 600_000, 1),
    retained: integer('options.retained', options.retained ?? 1, 1),
    maxConcurrent: integer('options.maxConcurrent', options.maxConcurrent ?? 1, 1),
    minPauseMs: integer('options.minPauseMs', options.minPauseMs ?? 0, 0),
    tolerableFailures: integer('options.tolerableFailures', options.tolerableFailures ?? 0, 0),
    store: options.store,
    triggerSources: options.triggerSources,
    notifyComplete: options.notifyComplete ?? (() => {}),
    notifyAborted: options.notifyAborted ?? (() => {}),
    discardState: options.discardState ?? (async () => {}),
    onFailure: options.onFailure,
    clock: options.clock ?? Date.now,
    timers: options.timers ?? { setTimeout: (cb, ms) => setTimeout(cb, ms), clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout) },
  };
}
