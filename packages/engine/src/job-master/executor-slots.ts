import type { TaskExecutorId } from '@weft/shuffle-api';
import type { TaskExecutor } from '../executor/task-executor.js';
import type { TaskProgress } from '../runtime/task-events.js';

/**
 * The task executors a job master schedules on, with their free slots: the one with the most free slots
 * takes the next region. A lost executor leaves for good (its late events are to be ignored); a
 * replacement joins once it started.
 */
export class ExecutorSlots {
  readonly #executors: TaskExecutor[] = [];
  readonly #free = new Map<TaskExecutor, number>();
  readonly #lost = new Set<string>();
  #replacing = 0;

  add(executor: TaskExecutor): void {
    this.#executors.push(executor);
    this.#free.set(executor, executor.slots);
  }

  /** Removes a lost executor; undefined when it is not (or no longer) one of these. */
  remove(id: TaskExecutorId): TaskExecutor | undefined {
    const executor = this.#executors.find((e) => e.id === id);
    if (executor === undefined) return undefined;
    this.#lost.add(id);
    this.#executors.splice(this.#executors.indexOf(executor), 1);
    this.#free.delete(executor);
    return executor;
  }

  isLost(id: TaskExecutorId): boolean {
    return this.#lost.has(id);
  }

  get count(): number {
    return this.#executors.length;
  }

  /** Replacements being started. */
  get replacing(): number {
    return this.#replacing;
  }

  /**
   * Starts an executor in place of a lost one: it counts in `replacing` until `start` settles, then
   * `outcome` is told (and `started` decides whether the executor joins, with `add`).
   */
  replace(start: () => Promise<TaskExecutor>, outcome: { started(executor: TaskExecutor): void; failed(error: unknown): void }): void {
    this.#replacing++;
    start().then(
      (executor) => {
        this.#replacing--;
        outcome.started(executor);
      },
      (error: unknown) => {
        this.#replacing--;
        outcome.failed(error);
      },
    );
  }

  /** The executor with the most free slots, if any has one. */
  best(): TaskExecutor | undefined {
    let best: TaskExecutor | undefined;
    let bestFree = 0;
    for (const executor of this.#executors) {
      const free = this.#free.get(executor) ?? 0;
      if (free > bestFree) {
        best = executor;
        bestFree = free;
      }
    }
    return best;
  }

  take(executor: TaskExecutor): void {
    this.#free.set(executor, (this.#free.get(executor) ?? 0) - 1);
  }

  /** Gives a slot back (nothing when the executor was lost meanwhile). */
  give(executor: TaskExecutor): void {
    if (this.#free.has(executor)) this.#free.set(executor, (this.#free.get(executor) ?? 0) + 1);
  }

  progress(): TaskProgress[] {
    return this.#executors.flatMap((e) => [...e.progress()]);
  }
}
