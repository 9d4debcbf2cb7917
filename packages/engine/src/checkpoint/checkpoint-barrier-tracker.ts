import { AlignmentTimer } from './alignment-timer.js';
import type { CheckpointAbortReason, CheckpointBarrierHandler, CheckpointTriggerInfo } from './checkpoint-barrier-handler.js';
import { InputChannels } from './input-channels.js';

/** Flink's limit: checkpoints with some but not all barriers tracked at once; the oldest is dropped beyond it. */
export const MAX_CHECKPOINTS_TO_TRACK = 50;

interface PendingCheckpoint {
  readonly checkpointId: number;
  /** The open channels when its first barrier (or marker) arrived. */
  readonly targetChannelCount: number;
  readonly aligned: Set<number>;
  aborted: boolean;
}

/**
 * At-least-once checkpoints, as Flink's `CheckpointBarrierTracker`: never blocks a channel; counts the
 * barriers of each checkpoint newer than the latest one seen, in order, and triggers one once every channel
 * open at its first barrier delivered it — dropping older pending checkpoints silently (subsumed). A
 * cancellation marker aborts its checkpoint (once) and every older pending one; an end of partition aborts
 * every pending checkpoint (END_OF_PARTITION).
 */
export class CheckpointBarrierTracker implements CheckpointBarrierHandler {
  readonly #channels: InputChannels;
  readonly #timer: AlignmentTimer;
  /** Oldest first. */
  readonly #pending: PendingCheckpoint[] = [];
  #latestPendingId = -1;
  #highestSeen = -1;

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
    return this.#highestSeen;
  }

  isBlocked(channel: number): boolean {
    return this.#channels.isBlocked(channel); // always false: the tracker blocks nothing
  }

  processBarrier(checkpointId: number, channel: number): void {
    this.#channels.checkEvent(`the barrier of checkpoint ${checkpointId}`, channel, checkpointId);
    this.#highestSeen = Math.max(this.#highestSeen, checkpointId);
    if (checkpointId > this.#latestPendingId && this.#channels.openCount === 1) {
      this.#timer.startAndEnd(checkpointId);
      this.onTrigger(checkpointId, { alignmentDurationMs: 0 });
      return;
    }
    const position = this.#pending.findIndex((p) => p.checkpointId === checkpointId);
    if (position >= 0) {
      const pending = this.#pending[position] as PendingCheckpoint;
      pending.aligned.add(channel);
      if (pending.aligned.size !== pending.targetChannelCount) return;
      this.#pending.splice(0, position + 1); // it and every older one (subsumed)
      if (!pending.aborted) this.#trigger(checkpointId);
    } else if (checkpointId > this.#latestPendingId) {
      this.#timer.start(checkpointId);
      this.#latestPendingId = checkpointId;
      this.#pending.push({ checkpointId, targetChannelCount: this.#channels.openCount, aligned: new Set([channel]), aborted: false });
      if (this.#pending.length > MAX_CHECKPOINTS_TO_TRACK) this.#pending.shift();
    }
    // else: older than the latest and no longer tracked — it cannot succeed any more
  }

  processCancellation(checkpointId: number, channel: number): void {
    this.#channels.checkEvent(`the cancellation marker of checkpoint ${checkpointId}`, channel, checkpointId);
    this.#highestSeen = Math.max(this.#highestSeen, checkpointId);
    if (checkpointId > this.#latestPendingId && this.#channels.openCount === 1) {
      this.#timer.reset();
      this.onAbort(checkpointId, 'CANCELLATION_BARRIER');
      return;
    }
    while (this.#pending.length > 0 && (this.#pending[0] as PendingCheckpoint).checkpointId < checkpointId) {
      const older = this.#pending.shift() as PendingCheckpoint;
      if (this.#markAborted(older)) this.onAbort(older.checkpointId, 'CANCELLATION_BARRIER');
    }
    const first = this.#pending[0];
    if (first !== undefined && first.checkpointId === checkpointId) {
      if (this.#markAborted(first)) this.onAbort(checkpointId, 'CANCELLATION_BARRIER');
      first.aligned.add(channel); // still counted, so the entry goes once every channel has spoken
      if (first.aligned.size === first.targetChannelCount) this.#pending.shift();
    } else if (checkpointId > this.#latestPendingId) {
      this.onAbort(checkpointId, 'CANCELLATION_BARRIER');
      this.#latestPendingId = checkpointId;
      this.#pending.unshift({ checkpointId, targetChannelCount: this.#channels.openCount, aligned: new Set([channel]), aborted: true });
    }
    // else: a trailing marker of a checkpoint already cancelled
  }

  processEndOfPartition(channel: number): void {
    this.#channels.checkEvent('the end of partition', channel);
    this.#channels.close(channel);
    for (const pending of this.#pending.splice(0)) {
      if (this.#markAborted(pending)) this.onAbort(pending.checkpointId, 'END_OF_PARTITION');
    }
    this.#timer.reset();
  }

  #markAborted(pending: PendingCheckpoint): boolean {
    if (pending.aborted) return false;
    pending.aborted = true;
    return true;
  }

  #trigger(checkpointId: number): void {
    if (checkpointId === this.#latestPendingId) this.#timer.end(); // one alignment is timed at a time: the latest
    this.onTrigger(checkpointId, { alignmentDurationMs: this.#timer.durationOf(checkpointId) });
  }
}
