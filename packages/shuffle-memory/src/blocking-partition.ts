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

  /**
   * Keeps the writer's segment itself, uncopied, even when a flush closed it partly filled: readers get
   * views into it. The price: each flush (an event, `flush()`, `finish()`) pins a whole buffer for
   * however few bytes it holds, which `bufferedBytes` counts. Blocking in memory is for tests and small
   * jobs; a producer that flushes after every few records should use a pipelined type or shuffle-remote.
   */
  addData(subpartition: number, segment: Uint8Array, length: number): void {
    if (this.state === 'released') {
      this.allocated--;
      return;
    }
    this.entries[subpartition]!.push({ kind: 'data', segment, length });
    this.bytesPerSubpartition[subpartition]! += length;
  }

  addEvent(subpartition: number, event: ShuffleEvent): void {
    if (this.state === 'released') return;
    this.entries[subpartition]!.push({ kind: 'event', event });
  }

  finish(): void {
    if (this.state === 'released') return;
    for (const list of this.entries) list.push({ kind: 'event', event: END_OF_PARTITION });
    this.state = 'finished';
    this.notify();
  }

  fail(error: ShuffleError): void {
    if (this.state === 'released') return;
    this.terminal = error;
    this.state = 'failed';
    this.dropEntries();
    this.notify();
  }

  release(error: ShuffleError): void {
    this.terminal = error;
    this.state = 'released';
    this.dropEntries();
    this.notify();
  }

  /** Forgets every kept buffer and event (readers already holding a view keep it alive until they move on). */
  private dropEntries(): void {
    for (const list of this.entries) {
      for (const entry of list) if (entry.kind === 'data') this.allocated--;
      list.length = 0;
    }
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
