import type { KeySelector, KeyValue } from '../api/functions.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import { KeyedTable } from './keyed-table.js';
import type { OperatorContext, Output, StreamOperator } from './stream-operator.js';

/**
 * Inner hash join: input `build` is read first, whole, into a table of values per key; then every value
 * of the other (probe) input is joined with the build values of its key, `fn(left, right)` each.
 */
export class JoinOperator implements StreamOperator {
  readonly inputPhases: readonly (readonly number[])[];
  readonly #table = new KeyedTable<unknown[]>();

  constructor(
    private readonly spec: {
      readonly leftKey: KeySelector<unknown, KeyValue>;
      readonly rightKey: KeySelector<unknown, KeyValue>;
      readonly fn: (left: unknown, right: unknown) => unknown;
      readonly build: 0 | 1;
    },
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {
    this.inputPhases = spec.build === 1 ? [[1], [0]] : [[0], [1]];
  }

  collect(value: unknown): void {
    this.processInput(value, 0);
  }

  processInput(value: unknown, input: number): void {
    const { spec, context } = this;
    let key: unknown;
    try {
      key = input === 0 ? spec.leftKey(value) : spec.rightKey(value);
    } catch (error) {
      throw userFunctionError(context, error, `${input === 0 ? 'left' : 'right'} key selector`);
    }
    let matches: unknown[] | undefined;
    try {
      matches = this.#table.get(key);
    } catch (error) {
      throw userFunctionError(context, error, `${input === 0 ? 'left' : 'right'} key selector`);
    }
    if (input === spec.build) {
      if (matches === undefined) this.#table.set(key, [value]);
      else matches.push(value);
      return;
    }
    if (matches === undefined) return;
    for (let i = 0; i < matches.length; i++) {
      let joined: unknown;
      try {
        joined = spec.build === 1 ? spec.fn(value, matches[i]) : spec.fn(matches[i], value);
      } catch (error) {
        throw userFunctionError(context, error, 'join function');
      }
      this.output.collect(joined);
    }
  }

  close(): void {
    this.#table.clear();
  }
}
