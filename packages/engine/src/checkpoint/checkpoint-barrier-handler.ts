/**
 * What a task's input does with checkpoint barriers (DESIGN.md contract 6): `aligned` is Flink's
 * `SingleCheckpointBarrierHandler` in aligned exactly-once mode — a channel that delivered the barrier of
 * the pending checkpoint is blocked until every open channel has, then the checkpoint triggers; `at-least-once`
 * is Flink's `CheckpointBarrierTracker` — it counts barriers per checkpoint and never blocks a channel.
 * Both run with Flink's "checkpoints after tasks finish" off: an end of partition while a checkpoint is
 * pending aborts it.
 */
export type CheckpointBarrierMode = 'aligned' | 'at-least-once';

/**
 * Why a checkpoint was aborted: a barrier of a newer checkpoint arrived first (`SUBSUMED`, aligned mode
 * only), a cancellation marker for it arrived (`CANCELLATION_BARRIER`), or a channel ended while it was
 * pending (`END_OF_PARTITION`).
 */
export type CheckpointAbortReason = 'SUBSUMED' | 'CANCELLATION_BARRIER' | 'END_OF_PARTITION';

export interface CheckpointTriggerInfo {
  /**
   * From the first barrier of the checkpoint to the last, on `clock`, for the checkpoint whose alignment
   * was measured last (Flink measures one alignment at a time); 0 for a single open channel and for a
   * checkpoint that completed while a newer one was being aligned (at-least-once mode).
   */
  readonly alignmentDurationMs: number;
}

export interface CheckpointBarrierHandlerOptions {
  readonly mode: CheckpointBarrierMode;
  /** Input channels of the task, numbered 0 … channels − 1; all open at the start. */
  readonly channels: number;
  /** Monotonic milliseconds. @defaultValue performance.now */
  readonly clock?: () => number;
  /** Every open channel delivered checkpoint `checkpointId`'s barrier: snapshot now. */
  readonly onTrigger: (checkpointId: number, info: CheckpointTriggerInfo) => void;
  readonly onAbort: (checkpointId: number, reason: CheckpointAbortReason) => void;
}

/**
 * Fed with the control events of a task's input channels in the order the task reads them. A blocked
 * channel delivers nothing (the task must not read from it; an event from it is refused).
 */
export interface CheckpointBarrierHandler {
  processBarrier(checkpointId: number, channel: number): void;
  /** A `CancelCheckpointMarker`: an upstream task declined checkpoint `checkpointId`. */
  processCancellation(checkpointId: number, channel: number): void;
  /** The channel ended; it no longer counts toward alignment. */
  processEndOfPartition(channel: number): void;
  isBlocked(channel: number): boolean;
  /** The highest checkpoint id a barrier or cancellation marker named so far; −1 before the first. */
  readonly latestCheckpointId: number;
}
