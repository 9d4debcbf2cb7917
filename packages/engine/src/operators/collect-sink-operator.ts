import type { OperatorContext, SinkOutput, StreamOperator } from './stream-operator.js';

/** The operator list state of a checkpointed collect sink: the values collected so far. */
const COLLECTED_STATE = 'collected';

/** Keeps every value; the job master gathers them into `JobResult.collected[name]`, subtask by subtask. */
export class CollectSinkOperator implements StreamOperator {
  #values: unknown[] = [];
  /** A restored attempt's values from its checkpoint not read yet: they go before what it collects (read at its first snapshot or its end, not on the way to its first record). */
  #restorePending: boolean;
  #finished = false;

  constructor(
    private readonly name: string,
    private readonly context: OperatorContext,
  ) {
    // a checkpointed job: what was collected up to the checkpoint the task restarts from
    this.#restorePending = context.state?.restored === true;
  }

  snapshotState(): void {
    this.context.state?.operator().listState<unknown>(COLLECTED_STATE, 'split').update(this.#all());
  }

  collect(value: unknown): void {
    this.#values.push(value);
  }

  finish(): void {
    this.#all();
    this.#finished = true;
  }

  sinkOutput(): SinkOutput | undefined {
    if (!this.#finished) return undefined;
    return { kind: 'collect', sink: this.name, subtask: this.context.subtask, parallelism: this.context.parallelism, values: this.#all() };
  }

  /** Every value: the restored ones (read now if they were not), then those collected since. */
  #all(): unknown[] {
    if (this.#restorePending) {
      this.#restorePending = false;
      const restored = this.context.state?.operator().listState<unknown>(COLLECTED_STATE, 'split').get() ?? [];
      this.#values = restored.length === 0 ? this.#values : [...restored, ...this.#values];
    }
    return this.#values;
  }
}
