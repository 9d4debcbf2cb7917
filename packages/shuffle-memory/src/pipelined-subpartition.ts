import { FifoQueue, RECORD_HEADER_BYTES } from '@weft/shuffle-api';
import type { BufferPool } from './buffer-pool.js';
import type { ChannelEntry } from './channel-entry.js';

/** The reader side a subpartition sends to: it grants credits and receives entries. */
export interface CreditedReceiver {
  /** Takes one credit for a data buffer; false when none is available (the receiver calls `send` later). */
  takeCredit(): boolean;
  receive(entry: ChannelEntry): void;
}

/** What an approximate subpartition lost to readers that went away (all counted, none estimated). */
export interface ApproximateLosses {
  /** Readers that attached again after one went away. */
  readonly reconnects: number;
  /** Data buffers dropped: sent to the reader that went away but unread, queued for it, or written while none was attached. */
  readonly buffersDropped: number;
  /** Records whose first byte was in a dropped buffer. */
  readonly recordsDropped: number;
  /** Record tails skipped so that a new reader starts at a whole record (their heads were dropped or went to the gone reader). */
  readonly partialRecordsSkipped: number;
  /**
   * Records no reader got whole: `recordsDropped` plus the skipped tails whose heads went to a gone reader
   * (a tail whose head was in a dropped buffer is counted once, with that buffer).
   */
  readonly recordsLost: number;
}

/**
 * One subpartition of a pipelined partition: a backlog of entries not yet sent, sent to the one reader
 * as it grants credit (one credit per data buffer; events and errors need none but keep their order).
 * Before a reader subscribes, the backlog waits — bounded by the partition's buffer pool.
 *
 * Approximate (PIPELINED_APPROXIMATE, Flink's PipelinedApproximateSubpartition): a reader that goes away
 * before the end of the partition detaches instead of consuming it. Its queued data is dropped, and so is
 * all data written until a new reader attaches (the producer never waits for a gone consumer); the new
 * reader is served from the next whole record — the first buffer it gets has the tail of a record begun
 * earlier cut off (its `partialRecordLength`), and a buffer that is all tail is skipped whole.
 */
export class PipelinedSubpartition {
  private readonly backlog = new FifoQueue<ChannelEntry>();
  private receiver: CreditedReceiver | null = null;
  private subscribed = false;
  private released = false;
  private sending = false;
  /** Approximate: END_OF_PARTITION went to a reader (its release then consumes the subpartition). */
  private ended = false;
  /** Approximate: a reader went away and no whole record was served since (Flink's isPartialBufferCleanupRequired). */
  private cleanupRequired = false;
  /** Approximate: the tail being skipped by this cleanup was counted. */
  private tailCounted = false;
  private losses = { reconnects: 0, buffersDropped: 0, recordsDropped: 0, partialRecordsSkipped: 0, recordsLost: 0 };
  /** Approximate: the last data buffer was dropped (not queued for a reader). */
  private lastDropped = false;

  constructor(
    private readonly pool: BufferPool,
    private readonly approximate = false,
  ) {}

  /** Data buffers waiting for credit. */
  get backlogSize(): number {
    return this.backlog.size;
  }

  get isReleased(): boolean {
    return this.released;
  }

  /** What readers that went away lost (approximate subpartitions; zeros otherwise). */
  get approximateLosses(): ApproximateLosses {
    return { ...this.losses };
  }

  /** Attaches the one reader (approximate: the next one, once the last went away). False when it was already consumed or released. */
  subscribe(receiver: CreditedReceiver): boolean {
    if (this.subscribed || this.released) return false;
    if (this.cleanupRequired) this.losses.reconnects++;
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
    if (entry.kind === 'data' && this.cleanupRequired) {
      // no reader: dropped; a new reader: served from the first whole record on
      const whole = this.receiver === null ? this.drop(entry) : this.cleanUp(entry);
      if (whole === undefined) return;
      entry = whole;
    }
    if (entry.kind === 'data') this.lastDropped = false;
    this.backlog.push(entry);
    if (this.receiver !== null) this.send();
  }

  /** Drops whatever is queued, without touching what was already sent, and pushes `entry` first. */
  replaceBacklog(entry: ChannelEntry): void {
    for (const queued of this.backlog.drain()) if (queued.kind === 'data') this.pool.recycle(queued.segment);
    this.add(entry);
  }

  /** Sends as much of the backlog as the reader has credit for. */
  send(): void {
    const receiver = this.receiver;
    if (receiver === null || this.sending) return;
    this.sending = true;
    try {
      for (let entry = this.backlog.peek(); entry !== undefined; entry = this.backlog.peek()) {
        if (entry.kind === 'data' && !receiver.takeCredit()) break;
        this.backlog.shift();
        if (entry.kind === 'event' && entry.event.type === 'end-of-partition') this.ended = true;
        receiver.receive(entry);
      }
    } finally {
      this.sending = false;
    }
  }

  /**
   * The reader released its end: an approximate subpartition whose end it did not get detaches (true),
   * any other is consumed and released (false).
   */
  readerReleased(unread: readonly ChannelEntry[] = []): boolean {
    if (!this.approximate || this.ended || this.released) {
      for (const entry of unread) if (entry.kind === 'data') this.pool.recycle(entry.segment);
      this.release();
      return false;
    }
    this.receiver = null;
    this.subscribed = false;
    this.cleanupRequired = true;
    this.tailCounted = false;
    // sent to the reader but never read: lost as dropped data is (the buffer before the first was read)
    this.lastDropped = false;
    for (const entry of unread) if (entry.kind === 'data') this.drop(entry);
    const kept: ChannelEntry[] = [];
    for (const entry of this.backlog.drain()) {
      if (entry.kind === 'data') this.drop(entry);
      else kept.push(entry);
    }
    for (const entry of kept) this.backlog.push(entry);
    return true;
  }

  /** The reader is gone or the partition was released: recycle the backlog, drop later data. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.receiver = null;
    for (const entry of this.backlog.drain()) if (entry.kind === 'data') this.pool.recycle(entry.segment);
  }

  /**
   * The first data buffer for a new reader after one went away: cut the partial record off its start. Returns the
   * buffer from its first whole record, or undefined when all of it is tail (dropped; cleanup goes on).
   */
  private cleanUp(entry: ChannelEntry & { kind: 'data' }): (ChannelEntry & { kind: 'data' }) | undefined {
    const partial = entry.partialRecordLength ?? 0;
    if (partial === 0) {
      this.cleanupRequired = false;
      return entry;
    }
    if (!this.tailCounted) this.losses.partialRecordsSkipped++;
    this.tailCounted = true;
    if (partial >= entry.length) return this.drop(entry);
    // its head went to the gone reader (a head in a dropped buffer was counted with it)
    if (!this.lastDropped) this.losses.recordsLost++;
    this.cleanupRequired = false;
    entry.segment.copyWithin(0, partial, entry.length);
    return { kind: 'data', segment: entry.segment, length: entry.length - partial };
  }

  /** Recycles a data buffer no reader will get, counting the records that start in it. */
  private drop(entry: ChannelEntry & { kind: 'data' }): undefined {
    const { segment, length } = entry;
    let records = 0;
    for (let position = entry.partialRecordLength ?? 0; position + RECORD_HEADER_BYTES <= length; records++) {
      const recordLength = (segment[position] as number) | ((segment[position + 1] as number) << 8) | ((segment[position + 2] as number) << 16) | ((segment[position + 3] as number) << 24);
      position += RECORD_HEADER_BYTES + (recordLength >>> 0);
    }
    this.losses.buffersDropped++;
    this.losses.recordsDropped += records;
    // and the record whose tail starts it, when its head went to a reader (a dropped head was counted)
    this.losses.recordsLost += records + ((entry.partialRecordLength ?? 0) > 0 && !this.lastDropped ? 1 : 0);
    this.lastDropped = true;
    this.pool.recycle(segment);
    return undefined;
  }
}
