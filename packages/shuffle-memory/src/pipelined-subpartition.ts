import { ApproximateCleanup, type ApproximateLosses, ApproximateReplayLog, END_OF_PARTITION, FifoQueue, ReplayCopier, resumeReader } from '@weft/shuffle-api';
import type { BufferPool } from './buffer-pool.js';
import type { ChannelEntry } from './channel-entry.js';

/** The reader side a subpartition sends to: it grants credits and receives entries. */
export interface CreditedReceiver {
  /** Takes one credit for a data buffer; false when none is available (the receiver calls `send` later). */
  takeCredit(): boolean;
  receive(entry: ChannelEntry): void;
}

/**
 * One subpartition of a pipelined partition: a backlog of entries not yet sent, sent to the one reader
 * as it grants credit (one credit per data buffer; events and errors need none but keep their order).
 * Before a reader subscribes, the backlog waits — bounded by the partition's buffer pool.
 *
 * Approximate (PIPELINED_APPROXIMATE, Flink's PipelinedApproximateSubpartition): a reader that goes away
 * detaches instead of consuming it — after its end too, which the next reader then gets again (a consumer
 * attempt restarted from a checkpoint reads a finished producer's records since that checkpoint from the
 * log; the job's release frees the subpartition). Its queued data is dropped, and so is
 * all data written until a new reader attaches (the producer never waits for a gone consumer); the new
 * reader is served from the next whole record — the first buffer it gets has the tail of a record begun
 * earlier cut off (its `partialRecordLength`), and a buffer that is all tail is skipped whole — unless
 * its upstream backup (`replayBytes` > 0: ApproximateReplayLog) still holds the record the new reader asks
 * to resume from (its restored state's position): then it is served again from that record.
 */
export class PipelinedSubpartition {
  private readonly backlog = new FifoQueue<ChannelEntry>();
  private receiver: CreditedReceiver | null = null;
  private subscribed = false;
  private released = false;
  private sending = false;
  /** Approximate: END_OF_PARTITION went to the attached reader (its release queues it again for the next one). */
  private ended = false;
  /** END_OF_PARTITION went to a reader once: everything was written and delivered. */
  private endDeliveredOnce = false;
  /** Approximate: the partial-record cleanup after a reader went away (shuffle-api's, shared with the network shuffle). */
  private readonly cleanup = new ApproximateCleanup();
  /** Approximate with `replayBytes` > 0: the data written since the latest completed checkpoint's barrier. */
  private readonly log: ApproximateReplayLog | undefined;
  /** Copies a queued replay into the pool as credit lets each buffer go. */
  private readonly replay: ReplayCopier;

  constructor(
    private readonly pool: BufferPool,
    private readonly approximate = false,
    replayBytes = 0,
  ) {
    this.log = approximate && replayBytes > 0 ? new ApproximateReplayLog(replayBytes) : undefined;
    this.replay = new ReplayCopier(pool, this.cleanup, () => this.send());
  }

  /** Data buffers waiting for credit. */
  get backlogSize(): number {
    return this.backlog.size;
  }

  get isReleased(): boolean {
    return this.released;
  }

  /** Its end went to a reader once (approximate: it still waits for a restarted one). */
  get endDelivered(): boolean {
    return this.endDeliveredOnce;
  }

  /** What readers that went away lost (approximate subpartitions; zeros otherwise). */
  get approximateLosses(): ApproximateLosses {
    return this.cleanup.losses;
  }

  /**
   * Attaches the one reader (approximate: the next one, once the last went away; `resumeFrom`: the record
   * its restored state read up to, replayed from there while the log holds it). False when it was
   * already consumed or released.
   */
  subscribe(receiver: CreditedReceiver, resumeFrom?: number): boolean {
    if (this.subscribed || this.released) return false;
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
      this.replay.queued(resumed.replay.length);
      for (const entry of kept) this.backlog.push(entry);
    }
    this.subscribed = true;
    this.receiver = receiver;
    this.send();
    return true;
  }

  add(entry: ChannelEntry): void {
    if (this.released) {
      if (entry.kind === 'data') this.pool.recycle(entry.segment);
      return;
    }
    if (entry.kind === 'data' && this.approximate) {
      const firstRecord = this.cleanup.written(entry.segment, entry.length, entry.partialRecordLength ?? 0);
      this.log?.append(entry.segment, entry.length, entry.partialRecordLength ?? 0, firstRecord);
    } else if (entry.kind === 'event' && entry.event.type === 'checkpoint-barrier') this.log?.barrier(entry.event.id, this.cleanup.writtenRecords);
    if (entry.kind === 'data' && this.cleanup.cleanupRequired) {
      // no reader: dropped; a new reader: served from the first whole record on
      const cut = this.cleanup.admit(entry.length, entry.partialRecordLength ?? 0, this.receiver !== null);
      if (cut === 'drop') return this.drop(entry);
      if (cut > 0) {
        entry.segment.copyWithin(0, cut, entry.length);
        entry = { kind: 'data', segment: entry.segment, length: entry.length - cut };
      }
    }
    this.backlog.push(entry);
    if (this.receiver !== null) this.send();
  }

  /** Checkpoint `checkpointId` completed: the log keeps only what came after its barrier. */
  checkpointCompleted(checkpointId: number): void {
    this.log?.checkpointCompleted(checkpointId);
  }

  /** Its producer restored a checkpoint before writing: the log keeps from the first buffer (ApproximateReplayLog.restored). */
  restored(): void {
    this.log?.restored();
  }

  /** Drops whatever is queued, without touching what was already sent, and pushes `entry` first. */
  replaceBacklog(entry: ChannelEntry): void {
    for (const queued of this.backlog.drain()) this.recycleQueued(queued);
    this.add(entry);
  }

  /** Sends as much of the backlog as the reader has credit for. */
  send(): void {
    const receiver = this.receiver;
    if (receiver === null || this.sending) return;
    this.sending = true;
    try {
      for (let entry = this.backlog.peek(); entry !== undefined; entry = this.backlog.peek()) {
        if (entry.kind === 'data' && entry.replayed === true && !this.replay.mayCopy()) break;
        if (entry.kind === 'data' && !receiver.takeCredit()) break;
        this.backlog.shift();
        if (entry.kind === 'event' && entry.event.type === 'end-of-partition') this.ended = this.endDeliveredOnce = true;
        if (entry.kind === 'data' && entry.replayed === true) {
          const segment = this.replay.copy(entry.segment, entry.length);
          receiver.receive({ kind: 'data', segment, length: entry.length, partialRecordLength: entry.partialRecordLength ?? 0, replayed: true });
        } else receiver.receive(entry);
      }
    } finally {
      this.sending = false;
    }
  }

  /**
   * The reader released its end: an approximate subpartition detaches (true) and waits for a next reader —
   * also once its end was delivered, since a consumer attempt restarted from a checkpoint reads it again
   * from its restored position (the replay, then the end again; without a log, the end at once, the records
   * since that position counted lost by the consumer from `channel-resumed`) until the job releases the
   * partition. Any other is consumed and released (false).
   */
  readerReleased(unread: readonly ChannelEntry[] = []): boolean {
    if (!this.approximate || this.released) {
      for (const entry of unread) if (entry.kind === 'data') this.pool.recycle(entry.segment);
      this.release();
      return false;
    }
    this.receiver = null;
    this.subscribed = false;
    if (unread.some((entry) => entry.kind === 'data' && entry.replayed === true)) this.cleanup.replayUnread();
    this.cleanup.readerGone(this.log !== undefined);
    this.replay.cleared();
    // sent to the reader but never read: lost as dropped data is
    for (const entry of unread) if (entry.kind === 'data') this.drop(entry, false);
    const kept: ChannelEntry[] = [];
    for (const entry of this.backlog.drain()) {
      if (entry.kind === 'data') this.drop(entry);
      else kept.push(entry);
    }
    // the end went to the reader that left: the next one gets it again, after its replay
    if (this.ended) kept.push({ kind: 'event', event: END_OF_PARTITION });
    this.ended = false;
    for (const entry of kept) this.backlog.push(entry);
    return true;
  }

  /** The reader is gone or the partition was released: recycle the backlog, drop later data. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.cleanup.settle();
    this.receiver = null;
    for (const entry of this.backlog.drain()) this.recycleQueued(entry);
    this.replay.cleared();
  }

  /**
   * Recycles a data buffer no reader will get, counting the records that start in it — unless it is a
   * replayed copy (counted when its original was written and dropped or delivered). `queued`: it comes
   * from the backlog (a replayed one there holds the log's bytes, no pool segment), not from the reader.
   */
  private drop(entry: ChannelEntry & { kind: 'data' }, queued = true): undefined {
    if (entry.replayed !== true) this.cleanup.dropped(entry.segment, entry.length, entry.partialRecordLength ?? 0);
    if (queued) this.recycleQueued(entry);
    else this.pool.recycle(entry.segment);
    return undefined;
  }

  /** Gives a queued entry's segment back to the pool (a replayed one still queued holds the log's bytes: nothing to give). */
  private recycleQueued(entry: ChannelEntry): void {
    if (entry.kind === 'data' && entry.replayed !== true) this.pool.recycle(entry.segment);
  }
}
