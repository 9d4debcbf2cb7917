import { type ApproximateLosses, END_OF_PARTITION, type ShuffleError, type ShuffleEvent, sumApproximateLosses } from '@weft/shuffle-api';
import { BufferPool } from './buffer-pool.js';
import { ProducedSubpartition } from './produced-subpartition.js';

export interface ProducedPartitionOptions {
  readonly numberOfSubpartitions: number;
  readonly bufferSizeBytes: number;
  /** Pool capacity; raised to numberOfSubpartitions + 1 so every subpartition can hold a buffer being filled. */
  readonly buffers: number;
  /** Called once every subpartition was consumed to its end or released. */
  readonly onFullyConsumed: () => void;
  /** PIPELINED_APPROXIMATE: a consumer that goes away before the end detaches, and a new one may subscribe (ProducedSubpartition). @defaultValue false */
  readonly approximate?: boolean;
  /** Approximate: each subpartition's upstream backup, in bytes (NetworkShuffleOptions.approximateReplayBytes). @defaultValue 0 */
  readonly approximateReplayBytes?: number;
}

/**
 * A pipelined partition held by the environment that produces it: the writer frames into segments of a
 * bounded pool; each full segment moves through its subpartition to the socket of the one consumer, and
 * back into the pool once written. Consumed once (approximate: each subpartition by one consumer at a
 * time, until one gets its end).
 */
export class ProducedPartition {
  readonly numberOfSubpartitions: number;
  readonly pool: BufferPool;
  private readonly subpartitions: ProducedSubpartition[];
  private done = 0;
  /** Approximate: the subpartitions whose end went to a view. */
  private ended = 0;

  constructor(private readonly options: ProducedPartitionOptions) {
    this.numberOfSubpartitions = options.numberOfSubpartitions;
    this.pool = new BufferPool(options.bufferSizeBytes, Math.max(options.buffers, options.numberOfSubpartitions + 1));
    this.subpartitions = Array.from({ length: options.numberOfSubpartitions }, () => new ProducedSubpartition(this.pool, () => this.subpartitionDone(), options.approximate ?? false, options.approximateReplayBytes ?? 0, () => this.subpartitionEnded()));
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

  /** What consumers that went away lost, summed over the subpartitions (approximate partitions; zeros otherwise). */
  get approximateLosses(): ApproximateLosses {
    return sumApproximateLosses(this.subpartitions.map((s) => s.approximateLosses));
  }

  /** Per subpartition, the records its gone consumers never got whole (FramedPartitionSink; ApproximateLosses.recordsLost, zeros unless approximate). */
  recordsLostBySubpartition(): number[] {
    return this.subpartitions.map((s) => s.approximateLosses.recordsLost);
  }

  /** Checkpoint `checkpointId` completed: the subpartitions' upstream backups keep only what came after its barrier (FramedPartitionSink). */
  checkpointCompleted(checkpointId: number): void {
    for (const s of this.subpartitions) s.checkpointCompleted(checkpointId);
  }

  /** Its producer restored a checkpoint before writing: the upstream backups keep from the first buffer. */
  restored(): void {
    for (const s of this.subpartitions) s.restored();
  }

  addEvent(subpartition: number, event: ShuffleEvent): void {
    this.subpartitions[subpartition]!.add({ kind: 'event', event });
  }

  finish(): void {
    for (const s of this.subpartitions) s.add({ kind: 'event', event: END_OF_PARTITION });
  }

  /**
   * The producer failed: consumers get `error` after what was already sent (approximate: after what was
   * queued too — the consumer keeps every whole record and learns this attempt is gone).
   */
  fail(error: ShuffleError): void {
    for (const s of this.subpartitions) {
      if (this.options.approximate === true) s.add({ kind: 'error', error });
      else s.replaceBacklog({ kind: 'error', error });
    }
    this.pool.wakeAll();
  }

  subpartition(index: number): ProducedSubpartition {
    return this.subpartitions[index]!;
  }

  /** Drops every buffer; subscribed consumers get `error`, later ones are refused. The partition is gone. */
  release(error: ShuffleError): void {
    for (const s of this.subpartitions) {
      if (!s.released) s.replaceBacklog({ kind: 'error', error });
      s.release();
    }
    this.pool.destroy();
  }

  /** Approximate: every subpartition's end went to a view: the partition only waits for restarted consumers, with no idle buffers. */
  private subpartitionEnded(): void {
    if (++this.ended === this.numberOfSubpartitions) this.pool.trim();
  }

  private subpartitionDone(): void {
    this.done++;
    if (this.done === this.numberOfSubpartitions) this.options.onFullyConsumed();
  }
}
