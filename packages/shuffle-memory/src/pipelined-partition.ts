import type { FloatingCredits } from '@weft/shuffle-api';
import { END_OF_PARTITION, type ShuffleError, type ShuffleEvent } from '@weft/shuffle-api';
import { BufferPool } from './buffer-pool.js';
import type { AvailabilityListener, PartitionSink, SubpartitionReader } from './channel-entry.js';
import { CreditedChannelReader } from './credited-channel-reader.js';
import { PipelinedSubpartition } from './pipelined-subpartition.js';

export interface PipelinedPartitionOptions {
  readonly numberOfSubpartitions: number;
  readonly bufferSizeBytes: number;
  /** Pool capacity; raised to numberOfSubpartitions + 1 so every subpartition can hold a buffer being filled. */
  readonly buffersPerPartition: number;
  /** Called once every subpartition has been consumed to its end or released. */
  readonly onFullyConsumed: () => void;
}

/**
 * A PIPELINED / PIPELINED_BOUNDED partition held in process: the writer frames into segments of a
 * bounded pool; each full segment moves (uncopied) through its subpartition to the one reader, which
 * recycles it into the same pool. Consumed once: each subpartition accepts a single reader.
 */
export class PipelinedPartition implements PartitionSink {
  readonly numberOfSubpartitions: number;
  private readonly pool: BufferPool;
  private readonly subpartitions: PipelinedSubpartition[];
  private done = 0;
  private failed = false;

  constructor(private readonly options: PipelinedPartitionOptions) {
    this.numberOfSubpartitions = options.numberOfSubpartitions;
    const capacity = Math.max(options.buffersPerPartition, options.numberOfSubpartitions + 1);
    this.pool = new BufferPool(options.bufferSizeBytes, capacity);
    this.subpartitions = Array.from({ length: options.numberOfSubpartitions }, () => new PipelinedSubpartition(this.pool));
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

  addData(subpartition: number, segment: Uint8Array, length: number): void {
    this.subpartitions[subpartition]!.add({ kind: 'data', segment, length });
  }

  addEvent(subpartition: number, event: ShuffleEvent): void {
    this.subpartitions[subpartition]!.add({ kind: 'event', event });
  }

  finish(): void {
    for (const s of this.subpartitions) s.add({ kind: 'event', event: END_OF_PARTITION });
  }

  fail(error: ShuffleError): void {
    this.failed = true;
    for (const s of this.subpartitions) s.replaceBacklog({ kind: 'error', error });
    this.pool.wakeAll();
  }

  /**
   * Subscribes the one reader of `subpartition`, or returns undefined when it was consumed already.
   * `release` of the returned reader marks the subpartition consumed.
   */
  openReader(subpartition: number, exclusiveCredits: number, floating: FloatingCredits, listener: AvailabilityListener): SubpartitionReader | undefined {
    const target = this.subpartitions[subpartition]!;
    const reader = new CreditedChannelReader(target, this.pool, exclusiveCredits, floating, listener);
    const owner = this;
    const tracked: SubpartitionReader = {
      poll: () => reader.poll(),
      get hasNext() {
        return reader.hasNext;
      },
      recycle: (entry) => reader.recycle(entry),
      release: () => {
        if (target.isReleased) return;
        reader.release();
        owner.subpartitionDone();
      },
    };
    return target.subscribe(reader) ? tracked : undefined;
  }

  /** Drops every buffer and refuses new readers; current readers get `error`. The partition is gone. */
  release(error: ShuffleError): void {
    for (const s of this.subpartitions) {
      if (!s.isReleased) {
        s.replaceBacklog({ kind: 'error', error });
        s.release();
        this.done++;
      }
    }
    this.pool.destroy();
  }

  get hasFailed(): boolean {
    return this.failed;
  }

  private subpartitionDone(): void {
    this.done++;
    if (this.done === this.numberOfSubpartitions) this.options.onFullyConsumed();
  }
}
