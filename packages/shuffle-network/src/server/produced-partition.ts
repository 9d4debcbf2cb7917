import { FifoQueue } from '@weft/shuffle-api';
import { END_OF_PARTITION, type ShuffleError, type ShuffleEvent } from '@weft/shuffle-api';
import { BufferPool } from './buffer-pool.js';

/** What a subpartition queues for its consumer: a filled buffer, an event, or a terminal error. */
export type SubpartitionEntry =
  | { readonly kind: 'data'; readonly segment: Uint8Array; readonly length: number }
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

/** One subpartition: a backlog sent to its one view as credit allows; events and errors need no credit. */
export class ProducedSubpartition {
  private readonly backlog = new FifoQueue<SubpartitionEntry>();
  private dataBacklog = 0;
  private view: SubpartitionView | null = null;
  private subscribed = false;
  private sending = false;
  released = false;

  constructor(
    private readonly pool: BufferPool,
    private readonly onDone: () => void,
  ) {}

  /** Attaches the one consumer; false when the subpartition was consumed or released. */
  subscribe(view: SubpartitionView): boolean {
    if (this.subscribed || this.released) return false;
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
    this.backlog.push(entry);
    if (entry.kind === 'data') this.dataBacklog++;
    if (this.view !== null) this.send();
  }

  /** Drops whatever is queued (not what was sent) and queues `entry` first. */
  replaceBacklog(entry: SubpartitionEntry): void {
    for (const queued of this.backlog.drain()) if (queued.kind === 'data') this.pool.recycle(queued.segment);
    this.dataBacklog = 0;
    this.add(entry);
  }

  /** Sends what the view has credit for; the partition's last entry (end or error) releases the subpartition. */
  send(): void {
    const view = this.view;
    if (view === null || this.sending) return;
    this.sending = true;
    try {
      for (let entry = this.backlog.peek(); entry !== undefined && this.view !== null; entry = this.backlog.peek()) {
        if (entry.kind === 'data') {
          if (view.credit <= 0) break;
          view.credit--;
          this.dataBacklog--;
        }
        this.backlog.shift();
        view.transmit(entry, this.dataBacklog);
        if (entry.kind === 'error' || (entry.kind === 'event' && entry.event.type === 'end-of-partition')) this.release();
      }
    } finally {
      this.sending = false;
    }
  }

  /** The consumer is gone, or the partition was released: recycle the backlog and drop later data. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.view = null;
    for (const entry of this.backlog.drain()) if (entry.kind === 'data') this.pool.recycle(entry.segment);
    this.dataBacklog = 0;
    this.onDone();
  }
}

export interface ProducedPartitionOptions {
  readonly numberOfSubpartitions: number;
  readonly bufferSizeBytes: number;
  /** Pool capacity; raised to numberOfSubpartitions + 1 so every subpartition can hold a buffer being filled. */
  readonly buffers: number;
  /** Called once every subpartition was consumed to its end or released. */
  readonly onFullyConsumed: () => void;
}

/**
 * A pipelined partition held by the environment that produces it: the writer frames into segments of a
 * bounded pool; each full segment moves through its subpartition to the socket of the one consumer, and
 * back into the pool once written. Consumed once.
 */
export class ProducedPartition {
  readonly numberOfSubpartitions: number;
  readonly pool: BufferPool;
  private readonly subpartitions: ProducedSubpartition[];
  private done = 0;

  constructor(private readonly options: ProducedPartitionOptions) {
    this.numberOfSubpartitions = options.numberOfSubpartitions;
    this.pool = new BufferPool(options.bufferSizeBytes, Math.max(options.buffers, options.numberOfSubpartitions + 1));
    this.subpartitions = Array.from({ length: options.numberOfSubpartitions }, () => new ProducedSubpartition(this.pool, () => this.subpartitionDone()));
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

  /** The producer failed: consumers get `error` after what was already sent. */
  fail(error: ShuffleError): void {
    for (const s of this.subpartitions) s.replaceBacklog({ kind: 'error', error });
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

  private subpartitionDone(): void {
    this.done++;
    if (this.done === this.numberOfSubpartitions) this.options.onFullyConsumed();
  }
}
