import { AlignmentTimer } from './alignment-timer.js';
import type { CheckpointAbortReason, CheckpointBarrierHandler, CheckpointTriggerInfo } from './checkpoint-barrier-handler.js';
import { InputChannels } from './input-channels.js';

/**
 * Aligned exactly-once checkpoints, as Flink's `SingleCheckpointBarrierHandler.aligned` (with its
 * `WaitingForFirstBarrier` / `CollectingBarriers` states): one checkpoint at a time; each channel that
 * delivers the pending checkpoint's barrier is blocked; when every channel open at its first barrier has
 * delivered it, the checkpoint triggers and every channel is unblocked. A barrier of a newer checkpoint
 * aborts the pending one (SUBSUMED); a cancellation marker for the pending or a newer checkpoint aborts it
 * (CANCELLATION_BARRIER) — Flink then reports only the cancelled id; an end of partition while a checkpoint
 * is pending aborts it (END_OF_PARTITION). Every abort unblocks every channel. Barriers and markers of
 * older checkpoints are ignored.
 */
export class AlignedBarrierHandler implements CheckpointBarrierHandler {
  readonly #channels: InputChannels;
  readonly #timer: AlignmentTimer;
  readonly #aligned = new Set<number>();
  #currentCheckpointId = -1;
  #lastCancelledOrCompletedId = -1;
  #targetChannelCount = 0;

  constructor(
    channels: number,
    clock: () => number,
    private readonly onTrigger: (checkpointId: number, info: CheckpointTriggerInfo) => void,
    private readonly onAbort: (checkpointId: number, reason: CheckpointAbortReason) => void,
  ) {
    this.#channels = new InputChannels(channels);
    this.#timer = new AlignmentTimer(clock);
  }

  get latestCheckpointId(): number {
    return this.#currentCheckpointId;
  }

  isBlocked(channel: number): boolean {
    return this.#channels.isBlocked(channel);
  }

  processBarrier(checkpointId: number, channel: number): void {
    this.#channels.checkEvent(`the barrier of checkpoint ${checkpointId}`, channel, checkpointId);
    if (this.#currentCheckpointId > checkpointId || (this.#currentCheckpointId === checkpointId && !this.#isPending())) return; // obsolete
    if (this.#currentCheckpointId < checkpointId) {
      if (this.#isPending()) this.#abort(this.#currentCheckpointId, 'SUBSUMED');
      this.#currentCheckpointId = checkpointId;
      this.#aligned.clear();
      this.#targetChannelCount = this.#channels.openCount;
    }
    this.#aligned.add(channel);
    const all = this.#aligned.size === this.#targetChannelCount;
    if (this.#aligned.size === 1) {
      if (this.#targetChannelCount === 1) this.#timer.startAndEnd(checkpointId);
      else this.#timer.start(checkpointId);
    }
    if (all && this.#targetChannelCount > 1) this.#timer.end();
    this.#channels.block(channel);
    if (!all) return;
    this.#aligned.clear();
    this.#lastCancelledOrCompletedId = checkpointId;
    this.#channels.unblockAll();
    this.onTrigger(checkpointId, { alignmentDurationMs: this.#timer.durationOf(checkpointId) });
  }

  processCancellation(checkpointId: number, channel: number): void {
    this.#channels.checkEvent(`the cancellation marker of checkpoint ${checkpointId}`, channel, checkpointId);
    if (checkpointId > this.#currentCheckpointId || (checkpointId === this.#currentCheckpointId && this.#aligned.size > 0)) this.#abort(checkpointId, 'CANCELLATION_BARRIER');
  }

  processEndOfPartition(channel: number): void {
    this.#channels.checkEvent('the end of partition', channel);
    this.#channels.close(channel);
    if (this.#isPending()) this.#abort(this.#currentCheckpointId, 'END_OF_PARTITION');
  }

  #isPending(): boolean {
    return this.#currentCheckpointId !== this.#lastCancelledOrCompletedId && this.#currentCheckpointId >= 0;
  }

  #abort(checkpointId: number, reason: CheckpointAbortReason): void {
    // current id raised with nothing aligned: no barrier of this checkpoint can start an alignment again
    this.#currentCheckpointId = Math.max(checkpointId, this.#currentCheckpointId);
    this.#lastCancelledOrCompletedId = Math.max(this.#lastCancelledOrCompletedId, checkpointId);
    this.#aligned.clear();
    this.#targetChannelCount = 0;
    this.#channels.unblockAll();
    if (checkpointId === this.#currentCheckpointId) this.#timer.reset();
    this.onAbort(checkpointId, reason);
  }
}
