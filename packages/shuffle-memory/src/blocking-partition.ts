import { END_OF_PARTITION, type ShuffleError, type ShuffleEvent } from '@weft/shuffle-api';
import type { AvailabilityListener, ChannelEntry, PartitionSink, SubpartitionReader } from './channel-entry.js';

/**
 * A BLOCKING / BLOCKING_PERSISTENT partition held in memory, for tests and small jobs: every buffer is
 * kept until the partition is released, becomes readable when the producer finishes, and can be read
 * by any number of readers. Memory is unbounded by design (memoryLimitBytes is Infinity).
 */
export class BlockingPartition implements PartitionSink {
  readonly numberOfSubpartitions: number;
  readonly writable = true;
  readonly memoryLimitBytes = Number.POSITIVE_INFINITY;
  private readonly entries: ChannelEntry[][];
  private readonly bytesPerSubpartition: number[];
  private state: 'producing' | 'finished' | 'failed' | 'released' = 'producing';
  private terminal: ShuffleError | undefined;
  private readonly waiting = new Set<AvailabilityListener>();
  private allocated = 0;

  constructor(
    numberOfSubpartitions: number,
    private readonly bufferSizeBytes: number,
  ) {
    this.numberOfSubpartitions = numberOfSubpartitions;
    this.entries = Array.from({ length: numberOfSubpartitions }, () => []);
    this.bytesPerSubpartition = new Array<number>(numberOfSubpartitions).fill(0);
  }

  get isFinished(): boolean {
    return this.state === 'finished';
  }

  get subpartitionBytes(): readonly number[] {
    return this.bytesPerSubpartition;
  }

  get bufferedBytes(): number {
    return this.allocated * this.bufferSizeBytes;
  }

  allocate(): Uint8Array {
    this.allocated++;
    return new Uint8Array(this.bufferSizeBytes);
  }

  recycle(): void {
    this.allocated--;
  }

  whenWritable(): Promise<void> {
    return Promise.resolve();
  }

  addData(subpartition: number, segment: Uint8Array, length: number): void {
    // Keep only the valid bytes: a flushed, partly filled segment would otherwise pin a whole buffer.
    const kept = length === segment.length ? segment : segment.slice(0, length);
    if (kept !== segment) this.allocated--;
    this.entries[subpartition]!.push({ kind: 'data', segment: kept, length });
    this.bytesPerSubpartition[subpartition]! += length;
  }

  addEvent(subpartition: number, event: ShuffleEvent): void {
    this.entries[subpartition]!.push({ kind: 'event', event });
  }

  finish(): void {
    for (const list of this.entries) list.push({ kind: 'event', event: END_OF_PARTITION });
    this.state = 'finished';
    this.notify();
  }

  fail(error: ShuffleError): void {
    this.terminal = error;
    this.state = 'failed';
    for (const list of this.entries) list.length = 0;
    this.notify();
  }

  release(error: ShuffleError): void {
    this.terminal = error;
    this.state = 'released';
    for (const list of this.entries) list.length = 0;
    this.notify();
  }

  /** A reader of one subpartition; it sees nothing until the partition finishes (or fails). */
  openReader(subpartition: number, listener: AvailabilityListener): SubpartitionReader {
    let next = 0;
    let done = false;
    const partition = this;
    const list = this.entries[subpartition]!;
    this.waiting.add(listener);
    return {
      get hasNext() {
        if (done) return false;
        if (partition.state === 'finished') return next < list.length;
        return partition.state !== 'producing';
      },
      poll(): ChannelEntry | undefined {
        if (done) return undefined;
        if (partition.state === 'finished') return list[next++];
        if (partition.state === 'producing') return undefined;
        done = true;
        return { kind: 'error', error: partition.terminal! };
      },
      recycle() {},
      release() {
        done = true;
        partition.waiting.delete(listener);
      },
    };
  }

  private notify(): void {
    for (const listener of [...this.waiting]) listener();
  }
}
