import type { OperatorContext, SinkOutput, StreamOperator } from './stream-operator.js';

/** Keeps every value; the job master gathers them into `JobResult.collected[name]`, subtask by subtask. */
export class CollectSinkOperator implements StreamOperator {
  #values: unknown[] = [];
  #finished = false;

  constructor(
    private readonly name: string,
    private readonly context: OperatorContext,
  ) {}

  collect(value: unknown): void {
    this.#values.push(value);
  }

  finish(): void {
    this.#finished = true;
  }

  sinkOutput(): SinkOutput | undefined {
    if (!this.#finished) return undefined;
    return { kind: 'collect', sink: this.name, subtask: this.context.subtask, parallelism: this.context.parallelism, values: this.#values };
  }
}
