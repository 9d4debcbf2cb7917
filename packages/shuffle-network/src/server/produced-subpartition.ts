import { ApproximateCleanup, type ApproximateLosses, ApproximateReplayLog, END_OF_PARTITION, FifoQueue, ReplayCopier, resumeReader, type ShuffleError, type ShuffleEvent } from '@weft/shuffle-api';
import type { BufferPool } from './buffer-pool.js';

/** What a subpartition queues for its consumer: a filled buffer, an event, or a terminal error. */
export type SubpartitionEntry =
  /**
   * `partialRecordLength`: the first bytes that are the tail of a record begun in an earlier buffer
   * (RecordFramer); 0 when absent. `replayed`: queued from the upstream backup (ApproximateReplayLog): its
   * segment is the log's bytes, copied into a pool segment as it is sent.
   */
  | { readonly kind: 'data'; readonly segment: Uint8Array; readonly length: number; readonly partialRecordLength?: number; readonly replayed?: boolean }
  | { readonly kind: 'event'; readonly event: ShuffleEvent }
  | { readonly kind: 'error'; readonly error: ShuffleError };

/**
 * Where a subpartition sends (Flink's credit-based sequence view): a remote channel that holds `credit`
 * buffers' worth of announced space. `transmit` owns a data entry's segment from then on and recycles
 * it once the socket is done with it.
 */
export interface SubpartitionView {
  credit: number;
  transmit(entry: SubpartitionEntry, backlog: number): void;
}

/**
 * One subpartition: a backlog sent to its one view as credit allows; events and errors need no credit.
 *
 * Approximate (PIPELINED_APPROXIMATE, Flink's PipelinedApproximateSubpartition): a view that goes away
 * (`viewGone`: its connection closed, its consumer cancelled) detaches instead of consuming the
 * subpartition — after its end too, which the next view gets again (a consumer attempt restarted from a
 * checkpoint reads a finished producer's records since then; the job's release frees it). What is queued is dropped, and so is every data buffer written until a new view
 * subscribes — the producer never waits on credit for a gone consumer; the new view is served from the
 * next whole record (shuffle-api's ApproximateCleanup, shared with the in-memory shuffle) — unless its
 * upstream backup (`replayBytes` > 0: ApproximateReplayLog) still holds the record the new view asks to
 * resume from (its consumer's restored state's position): then it is served again from that record. A view that
 * subscribes while another is still attached (the consumer's new attempt came before its old connection
 * was seen to close) replaces it, as Flink's does.
 */
export class ProducedSubpartition {
  private readonly backlog = new FifoQueue<SubpartitionEntry>();
  private readonly cleanup = new ApproximateCleanup();
  /** Approximate with `replayBytes` > 0: the data written since the latest completed checkpoint's barrier. */
  private readonly log: ApproximateReplayLog | undefined;
  private dataBacklog = 0;
  /** Copies a queued replay into the pool as credit lets each buffer go. */
  private readonly replay: ReplayCopier;
  private view: SubpartitionView | null = null;
  private subscribed = false;
  private sending = false;
  /** END_OF_PARTITION went to the attached view (approximate: the next view gets it again, after its replay). */
  private ended = false;
  /** END_OF_PARTITION went to a view once. */
  private endDeliveredOnce = false;
  released = false;

  /** `onEnded`: approximate, the first time its end went to a view (it then only waits for restarted consumers). */
  constructor(
    private readonly pool: BufferPool,
    private readonly onDone: () => void,
    private readonly approximate = false,
    replayBytes = 0,
    private readonly onEnded: () => void = () => {},
  ) {
    this.log = approximate && replayBytes > 0 ? new ApproximateReplayLog(replayBytes) : undefined;
    this.replay = new ReplayCopier(pool, this.cleanup, () => this.send());
  }

  /** What views that went away lost (approximate subpartitions; zeros otherwise). */
  get approximateLosses(): ApproximateLosses {
    return this.cleanup.losses;
  }

  /** Data buffers queued for credit. */
  get backlogSize(): number {
    return this.dataBacklog;
  }

  /**
   * Attaches the one consumer (approximate: the next one; `resumeFrom`: the record its restored state read
   * up to, replayed from there while the log holds it); false when the subpartition was consumed or released.
   */
  subscribe(view: SubpartitionView, resumeFrom?: number): boolean {
    if (this.released) return false;
    if (this.subscribed) {
      if (!this.approximate || this.view === null) return false;
      this.viewGone(this.view);
    }
    const resumed = resumeReader(this.cleanup, this.log, resumeFrom);
    // a reader after one that went away first learns where in the subpartition it starts, then gets the
    // replay, then the events kept for it (none of them is data): a barrier or watermark the gone reader
    // did not get comes after the replayed records written after it — late, never early, which
    // at-least-once checkpoints (what approximate recovery takes: the restored positions count what was
    // read) and watermarks tolerate
    if (resumed !== undefined) {
      const kept = this.backlog.drain();
      this.backlog.push({ kind: 'event', event: { type: 'channel-resumed', recordPosition: resumed.recordPosition } });
      for (const { bytes, partialRecordLength } of resumed.replay) this.backlog.push({ kind: 'data', segment: bytes, length: bytes.length, partialRecordLength, replayed: true });
      this.dataBacklog += resumed.replay.length;
      this.replay.queued(resumed.replay.length);
      for (const entry of kept) this.backlog.push(entry);
    }
    this.subscribed = true;
    this.view = view;
    this.send();
    return true;
  }

  add(entry: SubpartitionEntry): void {
    if (this.released) {
      if (entry.kind === 'data') this.pool.recycle(entry.segment);
      return;
    }
    if (entry.kind === 'data' && this.approximate) {
      const firstRecord = this.cleanup.written(entry.segment, entry.length, entry.partialRecordLength ?? 0);
      this.log?.append(entry.segment, entry.length, entry.partialRecordLength ?? 0, firstRecord);
    } else if (entry.kind === 'event' && entry.event.type === 'checkpoint-barrier') this.log?.barrier(entry.event.id, this.cleanup.writtenRecords);
    if (entry.kind === 'data' && this.cleanup.cleanupRequired) {
      // no view: dropped; a new view: served from the first whole record on
      const cut = this.cleanup.admit(entry.length, entry.partialRecordLength ?? 0, this.view !== null);
      if (cut === 'drop') {
        this.drop(entry);
        return;
      }
      if (cut > 0) {
        entry.segment.copyWithin(0, cut, entry.length);
        entry = { kind: 'data', segment: entry.segment, length: entry.length - cut };
      }
    }
    this.backlog.push(entry);
    if (entry.kind === 'data') this.dataBacklog++;
    if (this.view !== null) this.send();
  }

  /** Checkpoint `checkpointId` completed: the log keeps only what came after its barrier. */
  checkpointCompleted(checkpointId: number): void {
    this.log?.checkpointCompleted(checkpointId);
  }

  /** Its producer restored a checkpoint before writing: the log keeps from the first buffer (ApproximateReplayLog.restored). */
  restored(): void {
    this.log?.restored();
  }

  /** Drops whatever is queued (not what was sent) and queues `entry` first. */
  replaceBacklog(entry: SubpartitionEntry): void {
    for (const queued of this.backlog.drain()) this.recycleQueued(queued);
    this.dataBacklog = 0;
    this.replay.cleared();
    this.add(entry);
  }

  /** Sends what the view has credit for; the partition's last entry (end or error) releases the subpartition. */
  send(): void {
    const view = this.view;
    if (view === null || this.sending) return;
    this.sending = true;
    try {
      for (let entry = this.backlog.peek(); entry !== undefined && this.view === view; entry = this.backlog.peek()) {
        if (entry.kind === 'data') {
          if (view.credit <= 0) break;
          if (entry.replayed === true && !this.replay.mayCopy()) break;
          view.credit--;
          this.dataBacklog--;
        }
        this.backlog.shift();
        if (entry.kind === 'data' && entry.replayed === true) {
          const segment = this.replay.copy(entry.segment, entry.length);
          view.transmit({ kind: 'data', segment, length: entry.length, partialRecordLength: entry.partialRecordLength ?? 0 }, this.dataBacklog);
        } else view.transmit(entry, this.dataBacklog);
        if (entry.kind === 'event' && entry.event.type === 'end-of-partition') {
          if (!this.endDeliveredOnce && this.approximate) this.onEnded();
          this.ended = this.endDeliveredOnce = true;
        }
        // an approximate subpartition stays for a consumer attempt restarted from a checkpoint (viewGone)
        if (entry.kind === 'error' || (entry.kind === 'event' && entry.event.type === 'end-of-partition' && !this.approximate)) this.release();
      }
    } finally {
      this.sending = false;
    }
  }

  /**
   * `view`'s consumer is gone (connection closed, cancelled). An approximate subpartition detaches (its
   * queued data dropped, counted) and waits for the next view — after its end too, which the next view gets
   * again: a consumer attempt restarted from a checkpoint reads a finished producer's records since then from
   * the log (the job's release frees it). Any other is released. Nothing when `view` is not the attached
   * one (a newer view replaced it).
   */
  viewGone(view: SubpartitionView): void {
    if (this.view !== view) return;
    if (!this.approximate || this.released) {
      this.release();
      return;
    }
    this.view = null;
    this.subscribed = false;
    this.cleanup.readerGone(this.log !== undefined);
    const kept: SubpartitionEntry[] = [];
    for (const entry of this.backlog.drain()) {
      if (entry.kind === 'data') this.drop(entry);
      else kept.push(entry);
    }
    if (this.ended) kept.push({ kind: 'event', event: END_OF_PARTITION });
    this.ended = false;
    this.dataBacklog = 0;
    this.replay.cleared();
    for (const entry of kept) this.backlog.push(entry);
  }

  /** The consumer is gone, or the partition was released: recycle the backlog and drop later data. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.cleanup.settle();
    this.view = null;
    for (const entry of this.backlog.drain()) this.recycleQueued(entry);
    this.dataBacklog = 0;
    this.replay.cleared();
    this.onDone();
  }

  /**
   * Recycles a queued data buffer no view will get, counting it and the records that start in it —
   * unless it is a replayed copy (counted when its original was written and dropped or sent).
   */
  private drop(entry: SubpartitionEntry & { kind: 'data' }): void {
    if (entry.replayed !== true) this.cleanup.dropped(entry.segment, entry.length, entry.partialRecordLength ?? 0);
    this.recycleQueued(entry);
  }

  /** Gives a queued entry's segment back to the pool (a replayed one holds the log's bytes: nothing to give). */
  private recycleQueued(entry: SubpartitionEntry): void {
    if (entry.kind === 'data' && entry.replayed !== true) this.pool.recycle(entry.segment);
  }
}
