import type { KeySelector, KeyValue } from '../api/functions.js';
import type { Aggregator } from '../api/logical-graph.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import { KeyedTable } from './keyed-table.js';
import { emitAll, type OperatorContext, type Output, type StreamOperator } from './stream-operator.js';

/**
 * Map-side combining (Flink's combiner): folds values into one accumulator per key and emits
 * `[key, accumulator]` pairs at the end — or early, all at once, when it holds `maxKeys` keys.
 */
export class CombineOperator implements StreamOperator {
  readonly #table = new KeyedTable<unknown>();
  readonly #primitive: Map<unknown, unknown>;
  readonly #create: () => unknown;
  readonly #add: (accumulator: unknown, value: unknown) => unknown;
  readonly #count: boolean;

  constructor(
    private readonly key: KeySelector<unknown, KeyValue>,
    aggregator: Aggregator,
    private readonly maxKeys: number,
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {
    this.#primitive = this.#table.primitive;
    this.#create = aggregator.create;
    this.#add = aggregator.add;
    this.#count = aggregator.kind === 'count';
  }

  collect(value: unknown): void {
    let key: unknown;
    try {
      key = this.key(value);
    } catch (error) {
      throw userFunctionError(this.context, error, 'key selector');
    }
    // the fast path: keys a Map compares as keys compare (not -0, which a Map takes for 0)
    if (typeof key === 'string' || (typeof key === 'number' && !Object.is(key, -0))) {
      const map = this.#primitive;
      if (this.#count) {
        map.set(key, ((map.get(key) as number | undefined) ?? 0) + 1);
        if (map.size > this.maxKeys) this.#spill();
        return;
      }
      const previous = map.get(key);
      let next: unknown;
      try {
        next = this.#add(previous === undefined ? this.#create() : previous, value);
      } catch (error) {
        throw userFunctionError(this.context, error, 'aggregate function');
      }
      map.set(key, next);
      if (map.size > this.maxKeys) this.#spill();
      return;
    }
    const table = this.#table;
    let previous: unknown;
    try {
      previous = table.get(key);
    } catch (error) {
      throw userFunctionError(this.context, error, 'key selector');
    }
    let next: unknown;
    try {
      next = this.#add(previous === undefined ? this.#create() : previous, value);
    } catch (error) {
      throw userFunctionError(this.context, error, 'aggregate function');
    }
    table.set(key, next);
    if (table.size > this.maxKeys) this.#spill();
  }

  async finish(): Promise<void> {
    await emitAll(this.#table.entries(), this.output, this.context, (entry) => entry);
    this.#table.clear();
  }

  #spill(): void {
    for (const entry of this.#table.entries()) this.output.collect(entry);
    this.#table.clear();
  }
}
