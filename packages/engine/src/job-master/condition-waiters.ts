/**
 * Callers waiting, each at most its own timeout, for a condition the owner re-checks after every change
 * that may make it true (JobScheduler.whenRestartsResumed: a replacement executor's start waits for the
 * restarts so far to have their tasks reading again).
 */
export class ConditionWaiters {
  readonly #holds: () => boolean;
  readonly #waiters = new Set<() => void>();

  constructor(holds: () => boolean) {
    this.#holds = holds;
  }

  /** Resolves once the condition holds (at once when it does now), or after `timeoutMs`. */
  wait(timeoutMs: number): Promise<void> {
    if (this.#holds()) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      this.#waiters.add(done);
    });
  }

  /** Something changed: if the condition holds now, every waiter is resolved. */
  check(): void {
    if (this.#waiters.size === 0 || !this.#holds()) return;
    for (const done of [...this.#waiters]) done();
  }
}
