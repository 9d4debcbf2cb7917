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
  /** The job master completed a checkpoint (every task acknowledged it, it is stored): two-phase-commit sinks commit. Returns the unsubscribe. */
  onComplete(listener: (checkpointId: number) => void): () => void;
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
