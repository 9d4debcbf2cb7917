import { FifoQueue } from '@weft/shuffle-api';
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
 */
export class PipelinedSubpartition {
  private readonly backlog = new FifoQueue<ChannelEntry>();
  private receiver: CreditedReceiver | null = null;
  private subscribed = false;
  private released = false;
  private sending = false;

  constructor(private readonly pool: BufferPool) {}

  /** Data buffers waiting for credit. */
  get backlogSize(): number {
    return this.backlog.size;
  }

  get isReleased(): boolean {
    return this.released;
  }

  /** Attaches the one reader. False when it was already consumed or released. */
  subscribe(receiver: CreditedReceiver): boolean {
    if (this.subscribed || this.released) return false;
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
        receiver.receive(entry);
      }
    } finally {
      this.sending = false;
    }
  }

  /** The reader is gone or the partition was released: recycle the backlog, drop later data. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.receiver = null;
    for (const entry of this.backlog.drain()) if (entry.kind === 'data') this.pool.recycle(entry.segment);
  }
}
