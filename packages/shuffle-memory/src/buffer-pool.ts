import { InUseWaiters } from '@weft/shuffle-api';

/**
 * A partition's local buffer pool (Flink's LocalBufferPool): hands out fixed-size segments and takes them
 * back. `allocate` never refuses — a record larger than the pool must still be framed — but `exhausted`
 * tells the writer to stop emitting until segments come back, and `whenAvailable` waits for that.
 */
export class BufferPool {
  private readonly free: Uint8Array[] = [];
  /** How many idle segments it keeps: its capacity, none once trimmed. */
  private keep: number;
  private inUse = 0;
  private waiters: (() => void)[] = [];
  /** Waiters of `whenInUseAtMost`. */
  private readonly limitWaiters = new InUseWaiters();

  constructor(
    readonly bufferSizeBytes: number,
    readonly capacity: number,
  ) {
    this.keep = capacity;
  }

  get buffersInUse(): number {
    return this.inUse;
  }

  get exhausted(): boolean {
    return this.inUse >= this.capacity;
  }

  allocate(): Uint8Array {
    this.inUse++;
    return this.free.pop() ?? new Uint8Array(this.bufferSizeBytes);
  }

  recycle(segment: Uint8Array): void {
    this.inUse--;
    if (this.free.length < this.keep) this.free.push(segment);
    if (this.inUse < this.capacity && this.waiters.length > 0) this.wakeAll();
    this.limitWaiters.changed(this.inUse);
  }

  /**
   * Resolves once at most `n` segments are in use (or the pool is woken: `wakeAll`) — for a sender let
   * past the capacity by a bounded amount (an approximate subpartition's replay: one buffer over it, so
   * that live buffers queued behind the replay can never hold it back).
   */
  whenInUseAtMost(n: number): Promise<void> {
    return this.limitWaiters.whenAtMost(this.inUse, n);
  }

  /** Resolves once fewer than `capacity` segments are in use. */
  whenAvailable(): Promise<void> {
    if (!this.exhausted) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Wakes every waiter (they re-check whatever they wait for); used on failure and close too. */
  wakeAll(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
    this.limitWaiters.wakeAll();
  }

  /** Idle segments kept for reuse. */
  get idleBuffers(): number {
    return this.free.length;
  }

  /**
   * Drops the idle segments and keeps none from now on (each is made when needed): a finished partition
   * that only waits for a restarted consumer holds no idle memory.
   */
  trim(): void {
    this.free.length = 0;
    this.keep = 0;
  }

  /** Drops the free segments; segments in use are recycled into nothing. */
  destroy(): void {
    this.free.length = 0;
    this.wakeAll();
  }
}
