import type { ShuffleEvent } from '@weft/shuffle-api';
import type { CheckpointAbortReason, CheckpointBarrierHandler, CheckpointBarrierMode } from '../checkpoint/checkpoint-barrier-handler.js';
import { createCheckpointBarrierHandler } from '../checkpoint/create-checkpoint-barrier-handler.js';

/** The user event a task sends downstream in place of a barrier it declined (Flink's CancelCheckpointMarker). */
export const CANCEL_CHECKPOINT_EVENT = 'weft.cancel-checkpoint';

type Item = { readonly kind: 'records'; readonly values: readonly unknown[]; readonly input: number } | { readonly kind: 'event'; readonly event: ShuffleEvent };

export interface BarrierAlignerOptions {
  readonly mode: CheckpointBarrierMode;
  /** Input channels of the task, over all its gates (a gate's channels follow the earlier gates'). */
  readonly channels: number;
  /** Hands records to the task's head operator, in order. */
  readonly deliver: (values: readonly unknown[], input: number) => void;
  /** Every channel delivered the barrier of `checkpointId` (aligned) or it was counted complete: snapshot and forward. */
  readonly onCheckpoint: (checkpointId: number, timestampMs: number) => void;
  readonly onAbort: (checkpointId: number, reason: CheckpointAbortReason) => void;
  /** Every other event (watermarks), and each end of partition after the handler saw it — in order with the channel's records. */
  readonly onEvent?: (channel: number, event: ShuffleEvent) => void;
}

/**
 * Runs a task's input through its barrier handler. A gate cannot hold back one channel, so what a
 * blocked channel delivers while a checkpoint aligns is kept here, in order (records already
 * deserialized: a gate's buffers are valid only until its next read) and handed on once the checkpoint
 * triggered or was aborted — Flink's pre-1.4 BarrierBuffer, without spilling.
 */
export class BarrierAligner {
  readonly #options: BarrierAlignerOptions;
  readonly #handler: CheckpointBarrierHandler;
  readonly #queued: Item[][];
  readonly #timestamps = new Map<number, number>();
  #draining = false;

  constructor(options: BarrierAlignerOptions) {
    this.#options = options;
    this.#queued = Array.from({ length: options.channels }, () => []);
    this.#handler = createCheckpointBarrierHandler({
      mode: options.mode,
      channels: options.channels,
      onTrigger: (checkpointId) => {
        const timestampMs = this.#timestamps.get(checkpointId) ?? Date.now();
        this.#forget(checkpointId);
        options.onCheckpoint(checkpointId, timestampMs);
      },
      onAbort: (checkpointId, reason) => {
        this.#forget(checkpointId);
        options.onAbort(checkpointId, reason);
      },
    });
  }

  /** Items held for blocked channels (0 once every checkpoint aligned or aborted). */
  get queued(): number {
    return this.#queued.reduce((n, q) => n + q.length, 0);
  }

  /** Records held for `channel` (after its barrier, while a checkpoint aligns): not in that checkpoint's state. */
  queuedRecords(channel: number): number {
    let records = 0;
    for (const item of this.#queued[channel] ?? []) if (item.kind === 'records') records += item.values.length;
    return records;
  }

  /** Values (deserialized records) of one batch of `channel`. */
  records(channel: number, values: readonly unknown[], input: number): void {
    if (this.#handler.isBlocked(channel) || (this.#queued[channel] as Item[]).length > 0) (this.#queued[channel] as Item[]).push({ kind: 'records', values, input });
    else this.#options.deliver(values, input);
  }

  /** An event of `channel` (barriers, cancellation markers, end of partition; others go to `onEvent`). */
  event(channel: number, event: ShuffleEvent): void {
    if (this.#handler.isBlocked(channel) || (this.#queued[channel] as Item[]).length > 0) (this.#queued[channel] as Item[]).push({ kind: 'event', event });
    else this.#process(channel, event);
    this.#drain();
  }

  #process(channel: number, event: ShuffleEvent): void {
    const handler = this.#handler;
    if (event.type === 'checkpoint-barrier') {
      // (the handler ignores barriers of older checkpoints)
      if (event.id > handler.latestCheckpointId && !this.#timestamps.has(event.id)) this.#timestamps.set(event.id, event.timestampMs);
      handler.processBarrier(event.id, channel);
    } else if (event.type === 'user' && event.name === CANCEL_CHECKPOINT_EVENT) {
      const id = (event.payload as { checkpointId?: unknown } | null)?.checkpointId;
      if (typeof id === 'number' && Number.isSafeInteger(id) && id >= 1) handler.processCancellation(id, channel);
    } else if (event.type === 'end-of-partition') {
      handler.processEndOfPartition(channel);
      this.#options.onEvent?.(channel, event);
    } else this.#options.onEvent?.(channel, event);
  }

  /** Hands on what unblocked channels queued, until nothing more can move (an item may block its channel again). */
  #drain(): void {
    if (this.#draining) return;
    this.#draining = true;
    try {
      for (let moved = true; moved; ) {
        moved = false;
        for (let channel = 0; channel < this.#queued.length; channel++) {
          const queue = this.#queued[channel] as Item[];
          while (queue.length > 0 && !this.#handler.isBlocked(channel)) {
            const item = queue.shift() as Item;
            moved = true;
            if (item.kind === 'records') this.#options.deliver(item.values, item.input);
            else this.#process(channel, item.event);
          }
        }
      }
    } finally {
      this.#draining = false;
    }
  }

  #forget(checkpointId: number): void {
    for (const id of this.#timestamps.keys()) if (id <= checkpointId) this.#timestamps.delete(id);
  }
}
