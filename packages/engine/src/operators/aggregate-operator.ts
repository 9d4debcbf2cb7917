import type { KeySelector, KeyValue } from '../api/functions.js';
import type { Aggregator } from '../api/logical-graph.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import { SpillingAggregationTable } from '../memory/spilling-aggregation-table.js';
import { emitAll, type OperatorContext, type Output, type StreamOperator } from './stream-operator.js';

/**
 * The reduce side of a keyed aggregation: merges the `[key, accumulator]` pairs combiners sent (or, with
 * `key`, folds raw values when combining is off) and emits `aggregator.result(key, accumulator)` per key
 * once its inputs end. Its table lives within the task's memory budget: full, it spills a run sorted by
 * key and starts afresh; at the end the runs are merged and equal keys' accumulators combined with
 * `aggregator.merge` (SpillingAggregationTable). Output order is not defined (key order once spilled).
 */
export class AggregateOperator implements StreamOperator {
  readonly #table: SpillingAggregationTable;

  constructor(
    private readonly aggregator: Aggregator,
    private readonly key: KeySelector<unknown, KeyValue> | undefined,
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {
    const name = context.operatorName;
    const merge = aggregator.merge;
    this.#table = new SpillingAggregationTable({
      operator: name,
      consumer: context.memory.manager.consumer(name),
      spill: context.memory.spill,
      values: context.memory.serializer(),
      keys: context.memory.keySerializer(),
      merge: (a, b) => {
        try {
          return merge(a, b);
        } catch (error) {
          throw userFunctionError(context, error, 'aggregate function');
        }
      },
    });
  }

  /** Runs spilled so far. */
  get runsSpilled(): number {
    return this.#table.runsSpilled;
  }

  collect(value: unknown): void {
    const table = this.#table;
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
    let previous: unknown;
    try {
      previous = table.get(key);
    } catch (error) {
      throw userFunctionError(this.context, error, 'key selector');
    }
    let next: unknown;
    try {
      if (this.key === undefined) next = previous === undefined ? incoming : this.aggregator.merge(previous, incoming);
      else next = this.aggregator.add(previous === undefined ? this.aggregator.create() : previous, incoming);
    } catch (error) {
      throw userFunctionError(this.context, error, 'aggregate function');
    }
    table.set(key, next);
  }

  async finish(): Promise<void> {
    const result = this.aggregator.result;
    await emitAll(this.#table.entries(), this.output, this.context, ([key, accumulator]) => {
      try {
        return result(key, accumulator);
      } catch (error) {
        throw userFunctionError(this.context, error, 'aggregate result');
      }
    });
  }

  close(): void {
    this.#table.close();
  }
}
