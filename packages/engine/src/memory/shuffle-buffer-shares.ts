/**
 * The share of a task's memory budget (MemoryManager) its shuffle writers get together, split evenly
 * between its outputs (`CreateWriterRequest.memoryBytes`): shuffle-remote's writers cap their
 * `producerMemoryBytes` at it. Reserved from the budget when the writer is created, for the task's life.
 *
 * What the shuffle is asked for never goes below its minimum (MIN_WRITER_MEMORY_BYTES,
 * MIN_GATE_MEMORY_BYTES), but what is reserved from the budget is the share alone
 * (`writerReservedBytes`, `gateReservedBytes`): with a budget so small that the minimum is more than the
 * share (`--task-memory 64k`), the difference is fixed overhead outside the budget, and the operators keep
 * the rest. Reserving the minimum took the whole of a 64 KiB budget: a sort then spilled a run of one
 * record per record, hundreds of thousands of them, and its worker stopped heartbeating.
 */
export const WRITERS_BUDGET_FRACTION = 1 / 8;

/**
 * The share of a task's memory budget each of its input gates gets while it is open
 * (`CreateInputGateRequest.memoryBytes`): shuffle-remote's gates read in pieces of a quarter of it (never
 * above their `readBufferBytes`). Reserved when the gate is created, released when its input ends.
 */
export const GATE_BUDGET_FRACTION = 1 / 16;

/** The smallest writer share asked for (shuffle-remote's smallest `producerMemoryBytes`). */
export const MIN_WRITER_MEMORY_BYTES = 64 * 1024;

/** The smallest gate share asked for (four reads of 4 KiB). */
export const MIN_GATE_MEMORY_BYTES = 16 * 1024;

/** Bytes one of `outputs` writers of a task with budget `budgetBytes` may buffer. */
export function writerMemoryBytes(budgetBytes: number, outputs: number): number {
  return Math.max(MIN_WRITER_MEMORY_BYTES, Math.floor((budgetBytes * WRITERS_BUDGET_FRACTION) / Math.max(1, outputs)));
}

/** Bytes one input gate of a task with budget `budgetBytes` may hold in read buffers. */
export function gateMemoryBytes(budgetBytes: number): number {
  return Math.max(MIN_GATE_MEMORY_BYTES, Math.floor(budgetBytes * GATE_BUDGET_FRACTION));
}

/** What one writer's buffers take of the budget: its share, without the shuffle's minimum. */
export function writerReservedBytes(budgetBytes: number, outputs: number): number {
  return Math.min(writerMemoryBytes(budgetBytes, outputs), Math.floor((budgetBytes * WRITERS_BUDGET_FRACTION) / Math.max(1, outputs)));
}

/** What one open gate's read buffers take of the budget: its share, without the shuffle's minimum. */
export function gateReservedBytes(budgetBytes: number): number {
  return Math.min(gateMemoryBytes(budgetBytes), Math.floor(budgetBytes * GATE_BUDGET_FRACTION));
}
