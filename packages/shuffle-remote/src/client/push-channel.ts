/**
 * A bounded hand-off of chunks from a writer to an HTTP request body (an async iterable undici pulls
 * from). `put` resolves at once while fewer than `limitBytes` are queued, else once the request has taken
 * enough; so a streamed push holds at most `limitBytes` plus the chunk being put.
 */
export class PushChannel implements AsyncIterable<Uint8Array> {
  private readonly items: Uint8Array[] = [];
  private head = 0;
  private queuedBytes = 0;
  private ended = false;
  private failure: unknown;
  private failed = false;
  private wakeConsumer: (() => void) | undefined;
  private readonly waitingProducers: { resolve: () => void; reject: (error: unknown) => void }[] = [];

  constructor(private readonly limitBytes: number) {}

  get bytes(): number {
    return this.queuedBytes;
  }

  async put(chunk: Uint8Array): Promise<void> {
    if (this.failed) throw this.failure;
    if (this.ended) throw new Error('put after end');
    this.items.push(chunk);
    this.queuedBytes += chunk.length;
    this.wake();
    if (this.queuedBytes <= this.limitBytes) return;
    await new Promise<void>((resolve, reject) => this.waitingProducers.push({ resolve, reject }));
  }

  end(): void {
    this.ended = true;
    this.wake();
  }

  /** Stops the hand-off: waiting and later `put`s reject with `error`; the consumer stops. */
  fail(error: unknown): void {
    if (this.failed) return;
    this.failed = true;
    this.failure = error;
    this.items.length = 0;
    this.head = 0;
    this.queuedBytes = 0;
    for (const p of this.waitingProducers.splice(0)) p.reject(error);
    this.wake();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    for (;;) {
      if (this.failed) return;
      if (this.head < this.items.length) {
        const chunk = this.items[this.head]!;
        this.items[this.head++] = EMPTY;
        if (this.head === this.items.length) {
          this.items.length = 0;
          this.head = 0;
        }
        this.queuedBytes -= chunk.length;
        while (this.waitingProducers.length > 0 && this.queuedBytes <= this.limitBytes) this.waitingProducers.shift()!.resolve();
        yield chunk;
        continue;
      }
      if (this.ended) return;
      await new Promise<void>((resolve) => {
        this.wakeConsumer = resolve;
      });
    }
  }

  private wake(): void {
    const wake = this.wakeConsumer;
    this.wakeConsumer = undefined;
    wake?.();
  }
}

const EMPTY = new Uint8Array(0);
