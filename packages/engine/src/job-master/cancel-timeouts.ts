import type { Logger } from '@weft/shuffle-api';
import type { TaskExecutor } from '../executor/task-executor.js';

/**
 * One timer per cancelled region: if its tasks still run `timeoutMs` after the cancellation (a task that
 * ignores it — a user function stuck in a loop), each executor still running one is destroyed (a worker process is
 * killed), which reports it lost and ends those tasks. Timers are cleared when the region stops.
 */
export class CancelTimeouts {
  readonly #timers = new Map<number, ReturnType<typeof setTimeout>>();
  readonly #timeoutMs: number;
  readonly #logger: Logger;

  constructor(timeoutMs: number, logger: Logger) {
    this.#timeoutMs = timeoutMs;
    this.#logger = logger;
  }

  /** Arms region `region`'s timer over its `executors`; `stillRunningOn` is asked of each when it expires. */
  arm(region: number, executors: readonly TaskExecutor[], stillRunningOn: (executor: TaskExecutor) => boolean): void {
    this.clear(region);
    const timeoutMs = this.#timeoutMs;
    const timer = setTimeout(() => {
      this.#timers.delete(region);
      for (const executor of executors) {
        if (!stillRunningOn(executor)) continue;
        const problem = `tasks of region ${region} still ran ${timeoutMs} ms after they were cancelled (cancelTimeoutMs)`;
        if (executor.destroy === undefined) {
          this.#logger.warn({ region, taskExecutorId: executor.id }, `${problem}; this executor cannot be killed`);
          continue;
        }
        this.#logger.warn({ region, taskExecutorId: executor.id }, `${problem}: killing their executor`);
        executor.destroy(new Error(`${problem}, so it was killed`));
      }
    }, timeoutMs);
    this.#timers.set(region, timer);
  }

  clear(region: number): void {
    const timer = this.#timers.get(region);
    if (timer === undefined) return;
    clearTimeout(timer);
    this.#timers.delete(region);
  }

  clearAll(): void {
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }
}
