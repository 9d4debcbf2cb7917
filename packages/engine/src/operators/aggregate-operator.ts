import type { KeySelector, KeyValue } from '../api/functions.js';
import type { Aggregator } from '../api/logical-graph.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import { KeyedTable } from './keyed-table.js';
import { emitAll, type OperatorContext, type Output, type StreamOperator } from './stream-operator.js';

/**
 * The reduce side of a keyed aggregation: merges the `[key, accumulator]` pairs combiners sent (or, with
 * `key`, folds raw values when combining is off) and emits `aggregator.result(key, accumulator)` per key
 * once its inputs end.
 */
export class AggregateOperator implements StreamOperator {
  readonly #table = new KeyedTable<unknown>();

  constructor(
    private readonly aggregator: Aggregator,
    private readonly key: KeySelector<unknown, KeyValue> | undefined,
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {}

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
    this.#table.clear();
  }
}
