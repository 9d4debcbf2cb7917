import { FifoQueue, type FloatingCreditTaker, type FloatingCredits } from '@weft/shuffle-api';
import type { BufferPool } from './buffer-pool.js';
import type { AvailabilityListener, ChannelEntry, SubpartitionReader } from './channel-entry.js';
import type { CreditedReceiver, PipelinedSubpartition } from './pipelined-subpartition.js';

/**
 * The consumer end of one pipelined subpartition, with credit-based flow control (Flink's
 * RemoteInputChannel, in process): the channel owns `exclusiveCredits`, borrows floating credits from its
 * gate while the subpartition has a backlog, and returns a credit each time the consumer recycles a buffer.
 * So a gate never holds more buffers than its exclusive plus floating credits, and a producer's buffers
 * stay in its own pool until a consumer is ready for them.
 */
export class CreditedChannelReader implements SubpartitionReader, CreditedReceiver, FloatingCreditTaker {
  private readonly inbox = new FifoQueue<ChannelEntry>();
  private credits: number;
  private floatingHeld = 0;
  private released = false;

  constructor(
    private readonly subpartition: PipelinedSubpartition,
    private readonly pool: BufferPool,
    exclusiveCredits: number,
    private readonly floating: FloatingCredits,
    private readonly listener: AvailabilityListener,
  ) {
    this.credits = exclusiveCredits;
  }

  get hasNext(): boolean {
    return this.inbox.size > 0;
  }

  takeCredit(): boolean {
    if (this.credits > 0) {
      this.credits--;
      return true;
    }
    if (this.floating.request(this)) {
      this.floatingHeld++;
      return true;
    }
    return false;
  }

  grantFloatingCredit(): void {
    if (this.released) {
      this.floating.release();
      return;
    }
    this.floatingHeld++;
    this.credits++;
    this.subpartition.send();
  }

  receive(entry: ChannelEntry): void {
    this.inbox.push(entry);
    this.listener();
  }

  poll(): ChannelEntry | undefined {
    return this.inbox.shift();
  }

  recycle(entry: ChannelEntry): void {
    if (entry.kind !== 'data') return;
    this.pool.recycle(entry.segment);
    if (this.released) return;
    if (this.floatingHeld > 0 && this.subpartition.backlogSize === 0) {
      this.floatingHeld--;
      this.floating.release();
    } else {
      this.credits++;
      this.subpartition.send();
    }
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.floating.withdraw(this);
    // what was sent but never read goes back with the release: an approximate subpartition counts it as lost
    const unread = [...this.inbox.drain()];
    for (; this.floatingHeld > 0; this.floatingHeld--) this.floating.release();
    this.subpartition.readerReleased(unread);
  }
}
