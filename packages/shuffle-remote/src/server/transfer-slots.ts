/**
 * A counting semaphore for a server's S3 tier transfers: at most `max` run at once, the others wait their
 * turn in arrival order. Each transfer streams from the local file in bounded pieces, so `max` bounds the
 * memory the tier takes, whatever the number of pushes and commits.
 */
export class TransferSlots {
  private running = 0;
  private readonly queue: (() => void)[] = [];

  constructor(readonly max: number) {}

  /** Transfers running now. */
  get active(): number {
    return this.running;
  }

  /** Transfers waiting for a slot. */
  get waiting(): number {
    return this.queue.length;
  }

  /** Runs `body` once a slot is free; the slot is handed to the next waiter when it settles. */
  async run<T>(body: () => Promise<T>): Promise<T> {
    if (this.running < this.max) this.running++;
    else await new Promise<void>((resolve) => this.queue.push(resolve));
    try {
      return await body();
    } finally {
      const next = this.queue.shift();
      if (next === undefined) this.running--;
      else next();
    }
  }
}
