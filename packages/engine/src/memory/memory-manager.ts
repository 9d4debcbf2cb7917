import { availableParallelism, totalmem } from 'node:os';
import { getHeapStatistics } from 'node:v8';
import { EngineError, invalidEngineArgument } from '../errors/engine-error.js';

/**
 * The smallest task memory budget a task runs with: room for a sort's in-memory buffer and the read
 * buffers of a two-way merge. Below it `runJob` (and `weft run --task-memory`) refuse to start.
 */
export const MIN_TASK_MEMORY_BYTES = 64 * 1024;

/** The share of the machine's memory (or of the V8 heap limit, when smaller) the tasks of one executor may fill together by default. */
export const DEFAULT_TASK_MEMORY_FRACTION = 0.25;

/**
 * The default budget of one task on this machine: `DEFAULT_TASK_MEMORY_FRACTION` of the smaller of the
 * physical memory (or the container's limit, `process.constrainedMemory()`) and the V8 heap limit, divided by `slots` (tasks running at once in this process),
 * never below MIN_TASK_MEMORY_BYTES. The budget counts serialized bytes; JS structures the operators
 * keep beside them (keys of a sort, hash-table entries) take a multiple of that on the heap, hence the
 * fraction.
 */
export function defaultTaskMemoryBytes(slots: number = machineSlots()): number {
  return Math.max(MIN_TASK_MEMORY_BYTES, Math.floor((memoryLimitBytes() * DEFAULT_TASK_MEMORY_FRACTION) / Math.max(1, slots)));
}

let machineLimitBytes: number | undefined;
let machineSlotCount: number | undefined;

/** `availableParallelism()`, read once per process (a system call each time, and every task that starts without a budget asks). */
function machineSlots(): number {
  machineSlotCount ??= availableParallelism();
  return machineSlotCount;
}

/**
 * The smaller of the machine's memory (or its container's) and the V8 heap limit, read once per process:
 * `process.constrainedMemory()` reads the cgroup's files, and every task that starts without a budget of
 * its own asks (a restarted task's time until it reads again).
 */
function memoryLimitBytes(): number {
  if (machineLimitBytes !== undefined) return machineLimitBytes;
  // a container's limit (cgroup) where Node knows one: os.totalmem() is the host's
  const constrained = typeof process.constrainedMemory === 'function' ? process.constrainedMemory() : 0;
  const machine = constrained !== undefined && constrained > 0 ? Math.min(totalmem(), constrained) : totalmem();
  machineLimitBytes = Math.min(machine, getHeapStatistics().heap_size_limit);
  return machineLimitBytes;
}

/** Checks a task memory budget once (`field` names the option or flag); returns it. */
export function checkTaskMemoryBytes(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw invalidEngineArgument(field, `expected a whole number of bytes, got ${JSON.stringify(value)}`);
  if (value < MIN_TASK_MEMORY_BYTES) throw invalidEngineArgument(field, `${value} bytes is too small to run a task: at least ${MIN_TASK_MEMORY_BYTES} bytes (64 KiB)`, { minBytes: MIN_TASK_MEMORY_BYTES });
  return value;
}

/**
 * The managed memory of one task (Flink's MemoryManager, per slot): a budget in bytes of serialized data,
 * shared by the task's operators. Each operator takes a MemoryConsumer and reserves before it keeps more
 * bytes; a refused reservation is its cue to spill (or, for a combiner, to emit what it holds). Nothing
 * is allocated here: it only counts. Not thread-safe (one task, one thread).
 */
export class MemoryManager {
  readonly budgetBytes: number;
  #reserved = 0;
  #peak = 0;

  constructor(budgetBytes: number) {
    this.budgetBytes = checkTaskMemoryBytes('taskMemoryBytes', budgetBytes);
  }

  /** Bytes reserved now, by all consumers. */
  get reservedBytes(): number {
    return this.#reserved;
  }

  /** The most bytes reserved at once so far. */
  get peakReservedBytes(): number {
    return this.#peak;
  }

  get availableBytes(): number {
    return this.budgetBytes - this.#reserved;
  }

  /** A consumer for operator `operator` (its name appears in errors). */
  consumer(operator: string): MemoryConsumer {
    return new MemoryConsumer(this, operator);
  }

  /** @internal MemoryConsumer's */
  take(bytes: number): boolean {
    if (this.#reserved + bytes > this.budgetBytes) return false;
    this.#reserved += bytes;
    if (this.#reserved > this.#peak) this.#peak = this.#reserved;
    return true;
  }

  /** @internal MemoryConsumer's */
  force(bytes: number): void {
    this.#reserved += bytes;
    if (this.#reserved > this.#peak) this.#peak = this.#reserved;
  }

  /** @internal MemoryConsumer's */
  give(bytes: number): void {
    this.#reserved -= bytes;
  }
}

/** One operator's share of a MemoryManager: what it reserved, released all at once when it spills or closes. */
export class MemoryConsumer {
  #reserved = 0;

  constructor(
    readonly manager: MemoryManager,
    readonly operator: string,
  ) {}

  get reservedBytes(): number {
    return this.#reserved;
  }

  /** Reserves `bytes`; false (nothing reserved) when the task's budget has not that much left. */
  tryReserve(bytes: number): boolean {
    if (!this.manager.take(bytes)) return false;
    this.#reserved += bytes;
    return true;
  }

  /**
   * Reserves `bytes` even past the budget: for the one record an operator must hold after it spilled all
   * it had (another operator of the task holds the rest). Counted like any other reservation.
   */
  forceReserve(bytes: number): void {
    this.manager.force(bytes);
    this.#reserved += bytes;
  }

  release(bytes: number): void {
    const n = Math.min(bytes, this.#reserved);
    this.#reserved -= n;
    this.manager.give(n);
  }

  releaseAll(): void {
    this.release(this.#reserved);
  }

  /**
   * Throws WEFT_ERR_RECORD_TOO_LARGE when one record of `bytes` could never fit the task's budget, even
   * with everything else spilled: no amount of spilling helps it.
   */
  checkRecordSize(bytes: number): void {
    if (bytes <= this.manager.budgetBytes) return;
    throw new EngineError(
      'WEFT_ERR_RECORD_TOO_LARGE',
      `operator ${JSON.stringify(this.operator)}: a record of ${bytes} bytes (serialized) is larger than the task memory budget of ${this.manager.budgetBytes} bytes; raise --task-memory (RunJobOptions.taskMemoryBytes)`,
      { context: { operator: this.operator, recordBytes: bytes, budgetBytes: this.manager.budgetBytes, field: 'taskMemoryBytes' } },
    );
  }
}
