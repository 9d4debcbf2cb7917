import type { TaskExecutorId } from '@weft/shuffle-api';
import type { TaskExecutor } from '../executor/task-executor.js';
import type { TaskProgress } from '../runtime/task-events.js';

/**
 * The task executors a job master schedules on, with their free slots: the one with the most free slots
 * takes the next region. A lost executor leaves for good (its late events are to be ignored); a
 * replacement joins once it started.
 */
export class ExecutorSlots {
  /** Each executor (in the order they joined) and its free slots. */
  readonly #free = new Map<TaskExecutor, number>();
  readonly #lost = new Set<string>();
  readonly #retiring = new Set<string>();
  /** Every executor that ever joined, lost ones included, by id. */
  readonly #joined = new Map<string, TaskExecutor>();
  #replacing = 0;

  add(executor: TaskExecutor): void {
    this.#free.set(executor, executor.slots);
    this.#joined.set(executor.id, executor);
  }

  /** Every executor that joined during the run (at its start, as a replacement, or from a provider later), lost ones included. */
  get joined(): readonly TaskExecutor[] {
    return [...this.#joined.values()];
  }

  /** Removes a lost executor; undefined when it is not (or no longer) one of these. */
  remove(id: TaskExecutorId): TaskExecutor | undefined {
    for (const executor of this.#free.keys()) {
      if (executor.id !== id) continue;
      this.#lost.add(id);
      this.#free.delete(executor);
      return executor;
    }
    return undefined;
  }

  /** The executor takes no new work (`best` skips it); it keeps its running regions until it is lost. */
  retire(id: TaskExecutorId): void {
    this.#retiring.add(id);
  }

  isRetiring(id: TaskExecutorId): boolean {
    return this.#retiring.has(id);
  }

  isLost(id: TaskExecutorId): boolean {
    return this.#lost.has(id);
  }

  /** Executors that may still take work (retiring ones do not count). */
  get count(): number {
    let n = 0;
    for (const executor of this.#free.keys()) if (!this.#retiring.has(executor.id)) n++;
    return n;
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
    for (const [executor, free] of this.#free) {
      if (free > bestFree && !this.#retiring.has(executor.id)) {
        best = executor;
        bestFree = free;
      }
    }
    return best;
  }

  /** Executors that take new work and have a free slot, with their free slots (in the order they joined). */
  available(): [TaskExecutor, number][] {
    const out: [TaskExecutor, number][] = [];
    for (const [executor, free] of this.#free) if (free > 0 && !this.#retiring.has(executor.id)) out.push([executor, free]);
    return out;
  }

  /** Takes a slot of `executor` (nothing when it was lost). */
  take(executor: TaskExecutor): void {
    const free = this.#free.get(executor);
    if (free !== undefined) this.#free.set(executor, free - 1);
  }

  /** Gives a slot back (nothing when the executor was lost meanwhile). */
  give(executor: TaskExecutor): void {
    const free = this.#free.get(executor);
    if (free !== undefined) this.#free.set(executor, free + 1);
  }

  /** The executors not lost (retiring ones included: they still run tasks), in the order they joined. */
  get live(): readonly TaskExecutor[] {
    return [...this.#free.keys()];
  }

  progress(): TaskProgress[] {
    return [...this.#free.keys()].flatMap((e) => [...e.progress()]);
  }
}
