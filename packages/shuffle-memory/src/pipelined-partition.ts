import { type ApproximateLosses, type FloatingCredits, sumApproximateLosses } from '@weft/shuffle-api';
import { END_OF_PARTITION, type ShuffleError, type ShuffleEvent } from '@weft/shuffle-api';
import { BufferPool } from './buffer-pool.js';
import type { AvailabilityListener, ChannelEntry, PartitionSink, SubpartitionReader } from './channel-entry.js';
import { CreditedChannelReader } from './credited-channel-reader.js';
import { PipelinedSubpartition } from './pipelined-subpartition.js';

export interface PipelinedPartitionOptions {
  readonly numberOfSubpartitions: number;
  readonly bufferSizeBytes: number;
  /** Pool capacity; raised to numberOfSubpartitions + 1 so every subpartition can hold a buffer being filled. */
  readonly buffersPerPartition: number;
  /** Called once every subpartition has been consumed to its end or released. */
  readonly onFullyConsumed: () => void;
  /** PIPELINED_APPROXIMATE: a reader that goes away before the end detaches, and a new one may attach (PipelinedSubpartition). @defaultValue false */
  readonly approximate?: boolean;
  /** Approximate: each subpartition's upstream backup, in bytes (MemoryShuffleOptions.approximateReplayBytes). @defaultValue 0 */
  readonly approximateReplayBytes?: number;
}

/**
 * A PIPELINED / PIPELINED_BOUNDED / PIPELINED_APPROXIMATE partition held in process: the writer frames
 * into segments of a bounded pool; each full segment moves (uncopied) through its subpartition to the one
 * reader, which recycles it into the same pool. Consumed once: each subpartition accepts a single reader
 * (approximate: one at a time — a new reader attaches once the last went away before the end).
 */
export class PipelinedPartition implements PartitionSink {
  readonly numberOfSubpartitions: number;
  private readonly pool: BufferPool;
  private readonly subpartitions: PipelinedSubpartition[];
  private done = 0;
  private failed = false;
  /** Approximate: the subpartitions whose end went to a reader that left. */
  private readonly ended = new Set<number>();

  constructor(private readonly options: PipelinedPartitionOptions) {
    this.numberOfSubpartitions = options.numberOfSubpartitions;
    const capacity = Math.max(options.buffersPerPartition, options.numberOfSubpartitions + 1);
    this.pool = new BufferPool(options.bufferSizeBytes, capacity);
    this.subpartitions = Array.from({ length: options.numberOfSubpartitions }, () => new PipelinedSubpartition(this.pool, options.approximate ?? false, options.approximateReplayBytes ?? 0));
  }

  allocate(): Uint8Array {
    return this.pool.allocate();
  }

  recycle(segment: Uint8Array): void {
    this.pool.recycle(segment);
  }

  get writable(): boolean {
    return !this.pool.exhausted;
  }

  whenWritable(): Promise<void> {
    return this.pool.whenAvailable();
  }

  get bufferedBytes(): number {
    return this.pool.buffersInUse * this.pool.bufferSizeBytes;
  }

  get memoryLimitBytes(): number {
    return this.pool.capacity * this.pool.bufferSizeBytes;
  }

  addData(subpartition: number, segment: Uint8Array, length: number, partialRecordLength = 0): void {
    this.subpartitions[subpartition]!.add({ kind: 'data', segment, length, partialRecordLength });
  }

  /** What readers that went away lost, summed over the subpartitions (approximate partitions; zeros otherwise). */
  get approximateLosses(): ApproximateLosses {
    return sumApproximateLosses(this.subpartitions.map((s) => s.approximateLosses));
  }

  /** Per subpartition, the records its gone readers never got whole (ApproximateLosses.recordsLost; zeros unless approximate). */
  recordsLostBySubpartition(): number[] {
    return this.subpartitions.map((s) => s.approximateLosses.recordsLost);
  }

  addEvent(subpartition: number, event: ShuffleEvent): void {
    this.subpartitions[subpartition]!.add({ kind: 'event', event });
  }

  /** Checkpoint `checkpointId` completed: the subpartitions' upstream backups keep only what came after its barrier. */
  checkpointCompleted(checkpointId: number): void {
    for (const s of this.subpartitions) s.checkpointCompleted(checkpointId);
  }

  /** Its producer restored a checkpoint before writing: the upstream backups keep from the first buffer. */
  restored(): void {
    for (const s of this.subpartitions) s.restored();
  }

  finish(): void {
    for (const s of this.subpartitions) s.add({ kind: 'event', event: END_OF_PARTITION });
  }

  fail(error: ShuffleError): void {
    this.failed = true;
    // approximate: readers get what was sent before the failure, then learn this attempt is gone
    if (this.options.approximate === true) for (const s of this.subpartitions) s.add({ kind: 'unavailable' });
    else for (const s of this.subpartitions) s.replaceBacklog({ kind: 'error', error });
    this.pool.wakeAll();
  }

  /**
   * Subscribes the one reader of `subpartition`, or returns undefined when it was consumed already.
   * `release` of the returned reader marks the subpartition consumed.
   */
  openReader(subpartition: number, exclusiveCredits: number, floating: FloatingCredits, listener: AvailabilityListener, resumeFrom?: number): SubpartitionReader | undefined {
    const target = this.subpartitions[subpartition]!;
    const reader = new CreditedChannelReader(target, this.pool, exclusiveCredits, floating, listener);
    const owner = this;
    let released = false;
    const tracked: SubpartitionReader = {
      poll: () => reader.poll(),
      get hasNext() {
        return reader.hasNext;
      },
      recycle: (entry) => reader.recycle(entry),
      source: this,
      release: () => {
        if (released || target.isReleased) return;
        released = true;
        reader.release();
        // an approximate subpartition is never consumed: it waits for the next reader until the job releases it
        if (target.isReleased) owner.subpartitionDone();
        else if (target.endDelivered) owner.subpartitionEnded(subpartition);
      },
    };
    return target.subscribe(reader, resumeFrom) ? tracked : undefined;
  }

  /** Drops every buffer and refuses new readers; current readers get `error`. The partition is gone. */
  release(error: ShuffleError): void {
    const gone: ChannelEntry = this.options.approximate === true ? { kind: 'unavailable' } : { kind: 'error', error };
    for (const s of this.subpartitions) {
      if (!s.isReleased) {
        s.replaceBacklog(gone);
        s.release();
        this.done++;
      }
    }
    this.pool.destroy();
  }

  get hasFailed(): boolean {
    return this.failed;
  }

  /** Approximate: every subpartition's end went to a reader: the partition only waits for restarted ones, with no idle buffers. */
  private subpartitionEnded(subpartition: number): void {
    this.ended.add(subpartition);
    if (this.ended.size === this.numberOfSubpartitions) this.pool.trim();
  }

  private subpartitionDone(): void {
    this.done++;
    if (this.done === this.numberOfSubpartitions) this.options.onFullyConsumed();
  }
}
