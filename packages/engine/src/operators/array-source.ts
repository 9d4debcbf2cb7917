import { shareOf } from './range-source.js';
import type { OperatorContext, Output, SourceOperator } from './stream-operator.js';

const CHUNK = 4096;

/** Emits this subtask's contiguous slice of an array the job's build function holds. */
export class ArraySource implements SourceOperator {
  recordsEmitted = 0;

  constructor(
    private readonly values: readonly unknown[],
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {}

  async run(): Promise<void> {
    const { from, to } = shareOf(0, this.values.length, this.context.subtask, this.context.parallelism);
    const { backpressure, signal } = this.context;
    for (let chunk = from; chunk < to; chunk += CHUNK) {
      const stop = Math.min(to, chunk + CHUNK);
      for (let i = chunk; i < stop; i++) this.output.collect(this.values[i]);
      this.recordsEmitted += stop - chunk;
      if (backpressure.blocked) await backpressure.wait();
      if (((chunk - from) / CHUNK) % 16 === 15) await new Promise<void>((resolve) => setImmediate(resolve));
      if (signal.aborted) throw signal.reason;
    }
  }
}
