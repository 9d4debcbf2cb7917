/**
 * The share of a task's memory budget (MemoryManager) its shuffle writers get together, split evenly
 * between its outputs (`CreateWriterRequest.memoryBytes`): shuffle-remote's writers cap their
 * `producerMemoryBytes` at it. Reserved from the budget when the writer is created, for the task's life.
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
