import type { KeyedStateBackend } from '../state/keyed-state-backend.js';
import type { OperatorStateBackend } from '../state/operator-state-backend.js';
import type { CheckpointBarrierMode } from '../checkpoint/checkpoint-barrier-handler.js';
import type { TaskDeployment } from './task-deployment.js';

/** One operator's part of a task snapshot: its keyed state (when it has a keyed input) and its operator state. */
export interface OperatorStateSnapshot {
  readonly keyed?: Uint8Array;
  readonly operator?: Uint8Array;
}

/** What a task acknowledges a checkpoint with: the snapshot of each operator of its chain, by operator uid. */
export interface TaskSnapshot {
  readonly checkpointId: number;
  readonly operators: Readonly<Record<string, OperatorStateSnapshot>>;
}

/**
 * The state a task attempt starts from: for each operator uid, every old subtask's keyed snapshot (any
 * order; the restore reads the key groups it owns) and operator snapshot (in old subtask order).
 */
export interface TaskRestoreState {
  readonly checkpointId: number;
  readonly operators: Readonly<Record<string, { readonly keyed: readonly Uint8Array[]; readonly operator: readonly Uint8Array[] }>>;
}

/**
 * A task attempt's link to its job's checkpoints (the job master's JobCheckpointing hands one to each
 * attempt of a checkpointed job; absent otherwise — batch tasks ignore barriers).
 *
 * Sources subscribe with `onTrigger` and inject the barrier of each checkpoint they are told of; every
 * task runs its inputs' barriers through a barrier handler of `mode`, snapshots its operators' state
 * when a checkpoint is aligned, forwards the barrier and `acknowledge`s; a checkpoint it cannot take
 * (aborted by its inputs) is `decline`d. Calls arrive on the task's event loop; none of them throws.
 */
export interface TaskCheckpointing {
  readonly mode: CheckpointBarrierMode;
  /** The state to start from (the latest completed checkpoint), or undefined for a fresh start. */
  readonly restore: TaskRestoreState | undefined;
  /** A source's subscription to checkpoint triggers; returns the unsubscribe. */
  onTrigger(listener: (checkpointId: number, timestampMs: number) => void): () => void;
  /**
   * Subscription to completed checkpoints (Flink's notifyCheckpointComplete): called once per checkpoint
   * the job master completed while this attempt runs, in increasing id order — also for checkpoints this
   * attempt did not take part in (taken before it started). Returns the unsubscribe.
   */
  onComplete(listener: (checkpointId: number) => void): () => void;
  /**
   * A source that reached its end but must not finish before its last records are covered by a completed
   * checkpoint (a stream source acknowledging its entries): resolves with the id of the first checkpoint
   * completed after every source of the job reached this point (the job's final checkpoint), having told
   * `onComplete` listeners first — or with undefined when none can be taken any more (a source finished
   * without waiting, or checkpointing stopped). The source keeps taking checkpoints while it waits.
   */
  awaitFinalCheckpoint(): Promise<number | undefined>;
  acknowledge(snapshot: TaskSnapshot): void;
  /** `TASK_FAILURE` (the snapshot failed) counts toward the job's tolerated checkpoint failures; `DECLINED` (the inputs aborted it) does not. */
  decline(checkpointId: number, message: string, reason: 'TASK_FAILURE' | 'DECLINED'): void;
}

/** Gives each task attempt its TaskCheckpointing (undefined: the job takes no checkpoints). */
export type TaskCheckpointingProvider = (task: TaskDeployment) => Promise<TaskCheckpointing | undefined>;

/**
 * An operator's checkpointed state (Flink's heap backends): what it keeps here is snapshotted at every
 * checkpoint and restored when its task restarts from one. `keyed()` exists for operators with a keyed
 * input only (their subtask's key groups).
 */
export interface OperatorStateAccess {
  /** The task started from a checkpoint (its backends hold what it recorded). */
  readonly restored: boolean;
  keyed(): KeyedStateBackend;
  operator(): OperatorStateBackend;
}
