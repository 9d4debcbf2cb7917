import type { OperatorContext, Output, SourceOperator } from './stream-operator.js';

const CHUNK = 4096;

/** This subtask's contiguous share `[from, to)` of `[start, end)` split `parallelism` ways. */
export function shareOf(start: number, end: number, subtask: number, parallelism: number): { from: number; to: number } {
  const n = end - start;
  return { from: start + Math.floor((subtask * n) / parallelism), to: start + Math.floor(((subtask + 1) * n) / parallelism) };
}

/** Emits this subtask's contiguous share of the integers `[start, end)`. */
export class RangeSource implements SourceOperator {
  recordsEmitted = 0;

  constructor(
    private readonly start: number,
    private readonly end: number,
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {}

  async run(): Promise<void> {
    const { from, to } = shareOf(this.start, this.end, this.context.subtask, this.context.parallelism);
    const { backpressure, signal } = this.context;
    const output = this.output;
    for (let chunk = from; chunk < to; chunk += CHUNK) {
      const stop = Math.min(to, chunk + CHUNK);
      for (let i = chunk; i < stop; i++) output.collect(i);
      this.recordsEmitted += stop - chunk;
      if (backpressure.blocked) await backpressure.wait();
      if (((chunk - from) / CHUNK) % 16 === 15) await new Promise<void>((resolve) => setImmediate(resolve));
      if (signal.aborted) throw signal.reason;
    }
  }
}
