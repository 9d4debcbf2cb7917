/**
 * Waiters for a count to fall to a limit of their own — a buffer pool's segments in use, for a sender let
 * past the pool's capacity by a bounded amount (ReplayCopier). The owner reports the count as it changes
 * (`changed`); each waiter is resolved once the count is at most its limit, or all at once (`wakeAll`: the
 * pool failed or closed, the waiters check again).
 */
export class InUseWaiters {
  #waiting: { readonly limit: number; readonly resolve: () => void }[] = [];

  /** Resolves once `count` (as reported) is at most `limit`; at once when `current` already is. */
  whenAtMost(current: number, limit: number): Promise<void> {
    if (current <= limit) return Promise.resolve();
    return new Promise((resolve) => this.#waiting.push({ limit, resolve }));
  }

  /** The count is now `count`: the waiters whose limit it reached are resolved. */
  changed(count: number): void {
    if (this.#waiting.length === 0) return;
    const waiting = this.#waiting;
    this.#waiting = waiting.filter((w) => count > w.limit);
    for (const w of waiting) if (count <= w.limit) w.resolve();
  }

  wakeAll(): void {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const { resolve } of waiting) resolve();
  }
}
