/**
 * The alignment time of one checkpoint at a time, as Flink's `CheckpointBarrierHandler` base class keeps it:
 * started at the first barrier of a checkpoint, ended when its last one arrives; a checkpoint that is not
 * the one being timed reports 0.
 */
export class AlignmentTimer {
  #checkpointId = -1;
  #startedAt: number | undefined;
  #durationMs = 0;

  constructor(private readonly clock: () => number) {}

  /** The first barrier of `checkpointId` arrived (a new alignment; an unfinished one is dropped). */
  start(checkpointId: number): void {
    this.#checkpointId = checkpointId;
    this.#startedAt = this.clock();
    this.#durationMs = 0;
  }

  /** The first and the last barrier at once: a single open channel. */
  startAndEnd(checkpointId: number): void {
    this.start(checkpointId);
    this.#startedAt = undefined;
  }

  end(): void {
    if (this.#startedAt === undefined) return;
    this.#durationMs = Math.max(0, this.clock() - this.#startedAt);
    this.#startedAt = undefined;
  }

  /** An abort of the timed checkpoint: nothing measured. */
  reset(): void {
    this.#startedAt = undefined;
    this.#durationMs = 0;
  }

  durationOf(checkpointId: number): number {
    return checkpointId === this.#checkpointId ? this.#durationMs : 0;
  }
}
