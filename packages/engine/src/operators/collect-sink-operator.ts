import type { OperatorContext, SinkOutput, StreamOperator } from './stream-operator.js';

/** The operator list state of a checkpointed collect sink: the values collected so far. */
const COLLECTED_STATE = 'collected';

/** Keeps every value; the job master gathers them into `JobResult.collected[name]`, subtask by subtask. */
export class CollectSinkOperator implements StreamOperator {
  #values: unknown[] = [];
  #finished = false;

  constructor(
    private readonly name: string,
    private readonly context: OperatorContext,
  ) {
    // a checkpointed job: what was collected up to the checkpoint the task restarts from
    if (context.state?.restored === true) this.#values = context.state.operator().listState<unknown>(COLLECTED_STATE, 'split').get();
  }

  snapshotState(): void {
    this.context.state?.operator().listState<unknown>(COLLECTED_STATE, 'split').update(this.#values);
  }

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
