import type { KeySelector, KeyValue } from '../api/functions.js';
import type { Aggregator } from '../api/logical-graph.js';
import type { KeyedStateBackend } from '../state/keyed-state-backend.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import { emitAll, type OperatorContext, type Output, type StreamOperator } from './stream-operator.js';

/** The keyed value state holding each key's accumulator. */
export const ACCUMULATOR_STATE = 'accumulator';

/**
 * The reduce side of a keyed aggregation in a checkpointed (streaming) job: each key's accumulator lives
 * in the subtask's KeyedStateBackend, so a checkpoint snapshots the table by key group and a restore —
 * with this parallelism or another — brings back exactly the key groups the subtask owns. Emits
 * `aggregator.result(key, accumulator)` per key once its inputs end (a bounded stream), as the batch
 * operator does. No spilling: the table lives in memory (Flink's heap state backend).
 */
export class KeyedStateAggregateOperator implements StreamOperator {
  readonly #backend: KeyedStateBackend;
  readonly #state;

  constructor(
    private readonly aggregator: Aggregator,
    private readonly key: KeySelector<unknown, KeyValue> | undefined,
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {
    if (context.state === undefined) throw new Error('unreachable: a keyed-state aggregate outside a checkpointed job');
    this.#backend = context.state.keyed();
    this.#state = this.#backend.valueState<unknown>(ACCUMULATOR_STATE);
  }

  collect(value: unknown): void {
    let key: unknown;
    let incoming: unknown;
    if (this.key === undefined) {
      const pair = value as [KeyValue, unknown];
      key = pair[0];
      incoming = pair[1];
    } else {
      try {
        key = this.key(value);
      } catch (error) {
        throw userFunctionError(this.context, error, 'key selector');
      }
      incoming = value;
    }
    this.#backend.setCurrentKey(key);
    const previous = this.#state.value();
    let next: unknown;
    try {
      if (this.key === undefined) next = previous === undefined ? incoming : this.aggregator.merge(previous, incoming);
      else next = this.aggregator.add(previous === undefined ? this.aggregator.create() : previous, incoming);
    } catch (error) {
      throw userFunctionError(this.context, error, 'aggregate function');
    }
    this.#state.update(next);
  }

  async finish(): Promise<void> {
    const backend = this.#backend;
    await emitAll(backend.keys(ACCUMULATOR_STATE), this.output, this.context, (key) => {
      backend.setCurrentKey(key);
      try {
        return this.aggregator.result(key as KeyValue, this.#state.value());
      } catch (error) {
        throw userFunctionError(this.context, error, 'aggregate result');
      }
    });
  }
}
